% runbox: consulted before the program (/main.pl), so that a run ends as a script's does.
% `:- initialization(G)`, `:- initialization(G, main)` and plain `:- G` directives run G
% after the program is loaded, in order; an uncaught exception or a failure is reported
% on stderr and exits 1; after the last goal the run halts (exit 0) instead of entering
% Trealla's toplevel; a program that does not load (syntax error) exits 1. keysort/2,
% sort/4 and bagof/3 are made stable (below).
:- dynamic('$rb_armed'/0).
:- dynamic('$rb_goals'/0).
:- dynamic('$rb_depth'/1).
:- dynamic('$rb_first'/0).
'$rb_depth'(0).
% Each clause and directive of the program (and of the files it loads while it loads) is
% first given the stable sorts below ('$rb_stable'), then the run's own expansions.
term_expansion(T0, T) :-
    '$rb_armed', catch('$rb_stable'(T0, T1), _, T1 = T0),
    (   '$rb_expand'(T1, T2) -> T = T2 ; T1 \== T0, T = T1 ).
'$rb_expand'((:- initialization(G)), (:- initialization('$rb_run'(G)))) :-
    '$rb_armed', \+ G = '$rb_run'(_), \+ G = '$rb_end', \+ G == true, '$rb_goal',
    ignore(retract('$rb_first')).
'$rb_expand'((:- initialization(G, _)), (:- initialization('$rb_run'(G)))) :-
    '$rb_armed', '$rb_goal', ignore(retract('$rb_first')).
'$rb_expand'((:- G), (:- initialization('$rb_run'(G)))) :-
    '$rb_armed', callable(G), functor(G, N, _), \+ '$rb_directive'(N), '$rb_goal',
    ignore(retract('$rb_first')).
'$rb_expand'(begin_of_file, begin_of_file) :-
    '$rb_armed', retract('$rb_depth'(D)), D1 is D + 1, assertz('$rb_depth'(D1)),
    ( D1 =:= 1 -> assertz('$rb_first') ; true ), fail.
% Trealla runs a file's initialization goals only if one is read before its end: the
% program's first clause brings one.
'$rb_expand'(T, [(:- initialization(true)), T]) :-
    '$rb_armed', T \= (:- _), T \= (_ --> _), T \= begin_of_file, T \= end_of_file,
    retract('$rb_first').
% At the program's end (not a file it loads), halt after its goals; files its goals
% load are left as they are.
'$rb_expand'(end_of_file, (:- initialization('$rb_end'))) :-
    '$rb_armed', retract('$rb_depth'(D)), D1 is D - 1, assertz('$rb_depth'(D1)), D1 =:= 0,
    retract('$rb_armed'),
    (   '$rb_goals' -> true
    ;   format(user_error, "Warning: the program has no goal to run (add `:- initialization(main).`)~n", [])
    ).
'$rb_goal' :- ( '$rb_goals' -> true ; assertz('$rb_goals') ).
'$rb_directive'(D) :- member(D, [initialization, dynamic, discontiguous, multifile, module,
    use_module, ensure_loaded, include, op, set_prolog_flag, meta_predicate, public, export,
    reexport, attribute, autoload, create_prolog_flag, encoding, help, info, pragma,
    foreign_struct, use_foreign_module, if, elif, else, endif]).
'$rb_run'(G) :-
    (   catch(G, E, '$rb_stop'("uncaught exception: ~q", [E]))
    ->  true
    ;   '$rb_stop'("goal failed: ~q", [G])
    ).
'$rb_stop'(Format, Args) :-
    flush_output, format(user_error, "Error: ", []), format(user_error, Format, Args),
    nl(user_error), halt(1).
'$rb_end' :- flush_output, halt.
% Stable sorts. This Trealla sorts with wasi-libc's qsort, which is not stable (upstream
% Trealla breaks ties by position since 2026; npm has no newer trealla): keysort/2 could
% swap pairs of equal keys (ISO keeps their order), sort/4 on a key could swap elements
% of equal keys (and with @< or @> keep another than the first), and bagof/3 (which
% keysorts) could give a witness's solutions out of order. A builtin cannot be
% redefined, and goal_expansion/2 skips builtins, so the program's clauses and directives
% are rewritten as they are read: keysort/2, sort/4 and bagof/3 goals, and `keysort`,
% `sort(K, O)`, `bagof(T, G)` closures of call/N, maplist/N, foldl/N... and lambdas,
% call '$rb_keysort'/2, '$rb_sort4'/4 and '$rb_bagof'/3. They number the elements and
% sort with msort/2, whose order then never ties; arguments they do not take are handed
% to the builtin, which raises its own error. A goal built at run time (`G =.. [keysort|_],
% call(G)`) or asserted still calls the builtin.
'$rb_stable'(T0, T) :- \+ '$rb_sorts'(T0), !, T = T0.
'$rb_stable'((H :- B0), (H :- B)) :- !, '$rb_sgoal'(B0, 0, B).
'$rb_stable'((:- B0), (:- B)) :- !, '$rb_sgoal'(B0, 0, B).
'$rb_stable'([C0|Cs0], [C|Cs]) :- !, '$rb_stable'(C0, C), '$rb_stable'(Cs0, Cs).
'$rb_stable'(T, T).
% Whether a term names one (a quick look, before the closer one).
'$rb_sorts'(T) :-
    format(atom(A), "~q", [T]), member(W, [keysort, sort, bagof]), sub_atom(A, B, _, _, W),
    ( B =:= 0 -> true ; B1 is B - 1, sub_atom(A, B1, 1, _, C),
      \+ sub_atom(abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_, _, _, _, C) ), !.
% '$rb_sgoal'(G0, N, G): the goal G0, called with N more arguments, rewritten.
'$rb_sgoal'(G, _, G) :- var(G), !.
'$rb_sgoal'(M:G0, N, G) :- !, '$rb_sgoal'(G0, N, G1),
    ( callable(G1), functor(G1, F, _), '$rb_stable_name'(F) -> G = G1 ; G = M:G1 ).
'$rb_sgoal'(G0, N, G) :- compound(G0), G0 =.. ['>>', Ps, B0|Xs], !,
    length(Xs, X), ( Ps = _/Ps1 -> true ; Ps1 = Ps ),
    ( is_list(Ps1) -> length(Ps1, P), K is max(0, N + X - P), '$rb_sgoal'(B0, K, B) ; B = B0 ),
    G =.. ['>>', Ps, B|Xs].
'$rb_sgoal'(\(L0), N, \(L)) :- !, '$rb_lambda'(L0, N, L).
'$rb_sgoal'(G0, N, G) :- callable(G0), !,
    G0 =.. [F|As0], length(As0, A), Arity is A + N,
    ( '$rb_meta'(F, Arity, Spec) -> '$rb_args'(As0, Spec, As) ; As = As0 ),
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
% Armed after this file; then halt(1) now, which stands if the program does not load
% (a syntax or permission error ends Trealla's consult before the end of the file)
% and is cleared when its goals run or at its end.
:- initialization((assertz('$rb_armed'), halt(1))).
