% runbox: the stable sorts of the prelude (/.runbox/prelude.pl, which explains them),
% read by it when the program first names keysort, sort or bagof. Clauses only: each is
% asserted as it is read.
'$rb_stable_'((H :- B0), (H :- B)) :- !, '$rb_sgoal'(B0, 0, B).
'$rb_stable_'((:- B0), (:- B)) :- !, '$rb_sgoal'(B0, 0, B).
'$rb_stable_'([C0|Cs0], [C|Cs]) :- !, '$rb_stable'(C0, C), '$rb_stable'(Cs0, Cs).
'$rb_stable_'(T, T).
% '$rb_sgoal'(G0, N, G): the goal G0, called with N more arguments, rewritten.
'$rb_sgoal'(G, _, G) :- var(G), !.
'$rb_sgoal'(M:G0, N, G) :- !, '$rb_sgoal'(G0, N, G1),
    ( callable(G1), functor(G1, F, _), '$rb_stable_name'(F) -> G = G1 ; G = M:G1 ).
'$rb_sgoal'(G0, N, G) :- compound(G0), G0 =.. ['>>', Ps, B0|Xs], !,
    length(Xs, X), ( Ps = _/Ps1 -> true ; Ps1 = Ps ),
    ( is_list(Ps1) -> length(Ps1, P), K is max(0, N + X - P), '$rb_sgoal'(B0, K, B) ; B = B0 ),
    G =.. ['>>', Ps, B|Xs].
'$rb_sgoal'(\(L0), N, \(L)) :- !, '$rb_lambda'(L0, N, L).
% Arguments that name no sort hold nothing to rewrite: they are not looked into, which
% spares asking predicate_property/2 for a meta-predicate declaration (about 20 ms a
% goal in this Trealla) for every goal of a clause that sorts.
'$rb_sgoal'(G0, N, G) :- callable(G0), !,
    G0 =.. [F|As0], length(As0, A), Arity is A + N,
    (   '$rb_sorts'(As0), '$rb_meta'(F, Arity, Spec)
    ->  '$rb_args'(As0, Spec, As)
    ;   As = As0
    ),
    ( '$rb_stable_pred'(F, Arity, F1) -> true ; F1 = F ),
    G =.. [F1|As].
'$rb_sgoal'(G, _, G).
'$rb_lambda'(L, _, L) :- var(L), !.
'$rb_lambda'(V^L0, N, V^L) :- N > 0, !, N1 is N - 1, '$rb_lambda'(L0, N1, L).
'$rb_lambda'(L0, N, L) :- '$rb_sgoal'(L0, N, L).
'$rb_args'([], _, []).
'$rb_args'([A0|As0], [S|Ss], [A|As]) :- '$rb_arg'(S, A0, A), '$rb_args'(As0, Ss, As).
'$rb_arg'(S, A0, A) :- integer(S), !, '$rb_sgoal'(A0, S, A).
'$rb_arg'(^, A0, A) :- !, '$rb_caret'(A0, A).
'$rb_arg'(_, A, A).
'$rb_caret'(G, G) :- var(G), !.
'$rb_caret'(V^G0, V^G) :- !, '$rb_caret'(G0, G).
'$rb_caret'(G0, G) :- '$rb_sgoal'(G0, 0, G).
'$rb_stable_pred'(keysort, 2, '$rb_keysort').
'$rb_stable_pred'(sort, 4, '$rb_sort4').
'$rb_stable_pred'(bagof, 3, '$rb_bagof').
'$rb_stable_name'('$rb_keysort').
'$rb_stable_name'('$rb_sort4').
'$rb_stable_name'('$rb_bagof').
% The meta-arguments of a goal: how many arguments each is called with (0 for a goal),
% `^` for bagof's goal; the control constructs and common ones here, others as declared.
'$rb_meta'(F, A, Spec) :- '$rb_meta_'(F, A, Spec), !.
'$rb_meta'(F, A, Spec) :- functor(H, F, A),
    catch(predicate_property(H, meta_predicate(M)), _, fail), !, M =.. [_|Spec].
'$rb_meta_'(',', 2, [0, 0]).
'$rb_meta_'(;, 2, [0, 0]).
'$rb_meta_'(->, 2, [0, 0]).
'$rb_meta_'(*->, 2, [0, 0]).
'$rb_meta_'(\+, 1, [0]).
'$rb_meta_'(call, A, [K|Ss]) :- A >= 1, K is A - 1, length(Ss, K).
'$rb_meta_'(findall, 3, [?, 0, ?]).
'$rb_meta_'(findall, 4, [?, 0, ?, ?]).
'$rb_meta_'(forall, 2, [0, 0]).
'$rb_meta_'(bagof, 3, [?, ^, ?]).
'$rb_meta_'(setof, 3, [?, ^, ?]).
'$rb_meta_'(aggregate_all, 3, [?, 0, ?]).
'$rb_meta_'(once, 1, [0]).
'$rb_meta_'(ignore, 1, [0]).
'$rb_meta_'(not, 1, [0]).
'$rb_meta_'(catch, 3, [0, ?, 0]).
'$rb_meta_'(initialization, 1, [0]).
'$rb_meta_'(initialization, 2, [0, ?]).
'$rb_meta_'(maplist, A, [K|Ss]) :- A >= 2, K is A - 1, length(Ss, K).
'$rb_meta_'(foldl, A, [K|Ss]) :- A >= 4, K is A - 1, length(Ss, K).
'$rb_meta_'(include, 3, [1, ?, ?]).
'$rb_meta_'(exclude, 3, [1, ?, ?]).
'$rb_meta_'(partition, 4, [1, ?, ?, ?]).
'$rb_keysort'(Ps, Sorted) :-
    (   is_list(Ps), '$rb_pairs_or_vars'(Sorted), '$rb_keysort_'(Ps, S)
    ->  Sorted = S
    ;   keysort(Ps, Sorted)
    ).
% A list without variables is sorted inside findall/3, which then frees what the sorting
% built (Trealla keeps it otherwise until the program's clause ends).
'$rb_keysort_'(Ps, S) :- ground(Ps), !,
    findall(S0, ('$rb_number_pairs'(Ps, 0, Ns), msort(Ns, Ss), '$rb_unnumber_pairs'(Ss, S0)), [S]).
'$rb_keysort_'(Ps, S) :-
    '$rb_number_pairs'(Ps, 0, Ns), msort(Ns, Ss), '$rb_unnumber_pairs'(Ss, S).
'$rb_number_pairs'([], _, []).
'$rb_number_pairs'([P|Ps], I, [k(K, I, V)|Ns]) :-
    nonvar(P), P = K-V, I1 is I + 1, '$rb_number_pairs'(Ps, I1, Ns).
'$rb_unnumber_pairs'([], []).
'$rb_unnumber_pairs'([k(K, _, V)|Ns], [K-V|Ps]) :- '$rb_unnumber_pairs'(Ns, Ps).
'$rb_pairs_or_vars'(L) :- var(L), !.
'$rb_pairs_or_vars'([]).
'$rb_pairs_or_vars'([P|Ps]) :- ( var(P) -> true ; P = _-_ ), '$rb_pairs_or_vars'(Ps).
'$rb_sort4'(Key, Order, List, Sorted) :-
    (   integer(Key), Key >= 0, atom(Order), '$rb_order'(Order, Dir, Dedup),
        is_list(List), '$rb_list_or_partial'(Sorted),
        '$rb_sort4_'(List, Key, Dir, Dedup, S)
    ->  Sorted = S
    ;   sort(Key, Order, List, Sorted)
    ).
'$rb_sort4_'(List, Key, Dir, Dedup, S) :- ground(List), !,
    findall(S0, '$rb_sort4__'(List, Key, Dir, Dedup, S0), [S]).
'$rb_sort4_'(List, Key, Dir, Dedup, S) :- '$rb_sort4__'(List, Key, Dir, Dedup, S).
'$rb_sort4__'(List, Key, Dir, Dedup, S) :-
    '$rb_number_keys'(List, Key, Dir, 0, Ns), msort(Ns, Ss0),
    ( Dir == asc -> Ss = Ss0 ; reverse(Ss0, Ss) ),
    '$rb_unnumber_keys'(Ss, Dedup, S).
'$rb_order'(@=<, asc, false).
'$rb_order'(@<, asc, true).
'$rb_order'(@>=, desc, false).
'$rb_order'(@>, desc, true).
'$rb_list_or_partial'(L) :- var(L), !.
'$rb_list_or_partial'([]).
'$rb_list_or_partial'([_|L]) :- '$rb_list_or_partial'(L).
% Descending: numbered downwards, so that after msort and reverse equal keys keep
% their order.
'$rb_number_keys'([], _, _, _, []).
'$rb_number_keys'([E|Es], Key, Dir, I, [k(K, J, E)|Ns]) :-
    (   Key =:= 0 -> K = E
    ;   compound(E), functor(E, _, A), A >= Key, arg(Key, E, K)
    ),
    ( Dir == asc -> J = I ; J is -I ),
    I1 is I + 1, '$rb_number_keys'(Es, Key, Dir, I1, Ns).
'$rb_unnumber_keys'([], _, []).
'$rb_unnumber_keys'([k(K, _, E)|Ns], Dedup, [E|Es]) :-
    ( Dedup == true -> '$rb_skip_key'(Ns, K, Ns1) ; Ns1 = Ns ),
    '$rb_unnumber_keys'(Ns1, Dedup, Es).
'$rb_skip_key'([k(K0, _, _)|Ns], K, Rest) :- K0 == K, !, '$rb_skip_key'(Ns, K, Rest).
'$rb_skip_key'(Ns, _, Ns).
% bagof/3 with each solution numbered as it is found; a witness's solutions are then
% put back in that order.
'$rb_bagof'(Template, Goal, Bag) :-
    (   '$rb_list_or_partial'(Bag), '$rb_tick_goal'(Goal, I, Goal1)
    ->  bagof(I-Template, Goal1, Ns),
        msort(Ns, Ss),
        '$rb_values'(Ss, Bag)
    ;   bagof(Template, Goal, Bag)
    ).
'$rb_tick_goal'(G, _, _) :- ( var(G) ; G = _:_ ), !, fail.
'$rb_tick_goal'(V^G0, I, V^G) :- !, '$rb_tick_goal'(G0, I, G).
'$rb_tick_goal'(G, I, (G, '$rb_tick'(I))) :- callable(G).
'$rb_tick'(I) :- ( bb_get('$rb_tick', I0) -> true ; I0 = 0 ), I is I0 + 1, bb_put('$rb_tick', I).
'$rb_values'([], []).
'$rb_values'([_-V|Ps], [V|Vs]) :- '$rb_values'(Ps, Vs).
