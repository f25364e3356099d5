% runbox: consulted before the program (/main.pl), so that a run ends as a script's does.
% `:- initialization(G)`, `:- initialization(G, main)` and plain `:- G` directives run G
% after the program is loaded, in order; an uncaught exception or a failure is reported
% on stderr and exits 1; after the last goal the run halts (exit 0) instead of entering
% Trealla's toplevel; a program that does not load (syntax error) exits 1. keysort/2,
% sort/4 and bagof/3 are made stable (below, and /.runbox/stable.pl).
:- dynamic('$rb_armed'/0).
:- dynamic('$rb_goals'/0).
:- dynamic('$rb_depth'/1).
:- dynamic('$rb_first'/0).
'$rb_depth'(0).
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
'$rb_stable'(T0, T) :- '$rb_load_stable', '$rb_stable_'(T0, T).
% Whether a term names one (a quick look, before the closer one).
'$rb_sorts'(T) :-
    format(atom(A), "~q", [T]), member(W, [keysort, sort, bagof]), sub_atom(A, B, _, _, W),
    ( B =:= 0 -> true ; B1 is B - 1, sub_atom(A, B1, 1, _, C),
      \+ sub_atom(abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_, _, _, _, C) ), !.
% The rewriting and the stable sorts themselves are in /.runbox/stable.pl, read only when
% a clause of the program first names one of them: consulting costs this Trealla about
% 30 µs a line, and most programs sort nothing.
:- dynamic('$rb_stable_loaded'/0).
'$rb_load_stable' :- '$rb_stable_loaded', !.
'$rb_load_stable' :-
    assertz('$rb_stable_loaded'),
    open('/.runbox/stable.pl', read, S),
    call_cleanup('$rb_assert_all'(S), close(S)).
'$rb_assert_all'(S) :-
    read_term(S, T, []),
    ( T == end_of_file -> true ; assertz(T), '$rb_assert_all'(S) ).
% Each clause and directive of the program (and of the files it loads while it loads) is
% first given the stable sorts above ('$rb_stable'), then the run's own expansions.
% Defined last, so that this file's own clauses are not passed through it (1.5 ms).
term_expansion(T0, T) :-
    '$rb_armed', catch('$rb_stable'(T0, T1), _, T1 = T0),
    (   '$rb_expand'(T1, T2) -> T = T2 ; T1 \== T0, T = T1 ).
% Armed after this file; then halt(1) now, which stands if the program does not load
% (a syntax or permission error ends Trealla's consult before the end of the file)
% and is cleared when its goals run or at its end.
:- initialization((assertz('$rb_armed'), halt(1))).
