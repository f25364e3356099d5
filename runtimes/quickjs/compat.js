// runbox: run by qjs (`-I`) before the program, as a script, `std` and `os` being globals
// (`--std`). QuickJS-ng names its modules 'qjs:std' and 'qjs:os'; programs written for
// QuickJS import 'std' and 'os'. qjs loads a bare module name as the file of that name in
// the working directory, the program's own, so both are loaded here, once and by those
// names, from the directories the adapter writes them into (the settings below:
// /.runbox/quickjs/std/std and /.runbox/quickjs/os/os, runbox's own files); the program's
// imports then find them loaded. The program's files are not touched: 'std.js' and './std.js' are
// other names, and a file of its own named `std` (or `os`), which './std' also names,
// is what it gets, as before.
(() => {
  const [cwd, err] = os.getcwd();
  try {
    for (const name of ["std", "os"]) {
      if (os.stat(name)[1] === 0) continue;
      os.chdir(`/.runbox/quickjs/${name}`);
      std.evalScript(`import '${name}';`, { compile_module: true });
      os.chdir(err ? "/" : cwd);
    }
  } finally {
    os.chdir(err ? "/" : cwd);
  }
})();
