//! Hostile programs in every runtime: nothing gets out, nothing hangs, nothing takes the
//! host down. Each case names what the program tries; the assertions check what matters
//! (no host data in the output, no connection received, bounded time) rather than the
//! exact error each language prints.

use crate::common;

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{run, run_limited, run_with, runbox, ATTACKED_RUNTIMES as RUNTIMES};
use runbox::service::{RunOutcome, RunStatus};

/// A file planted on the host that no program may read or list.
struct Canary {
    dir: PathBuf,
    path: String,
    name: String,
    secret: String,
}

fn canary() -> &'static Canary {
    static CANARY: OnceLock<Canary> = OnceLock::new();
    CANARY.get_or_init(|| {
        let unique = format!(
            "{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        );
        // Beside the scratch directories (both in the temp dir), so `..` walks from
        // scratch would reach it if they could.
        let dir = std::env::temp_dir().join(format!("runbox-canary-dir-{unique}"));
        std::fs::create_dir_all(&dir).unwrap();
        let name = format!("runbox-canary-{unique}.txt");
        let secret = format!("CANARY-SECRET-{unique}-{}", std::process::id() * 7919);
        let path = dir.join(&name);
        std::fs::write(&path, &secret).unwrap();
        Canary {
            path: path.display().to_string(),
            dir,
            name,
            secret,
        }
    })
}

/// Nothing of the canary, nor of the host's environment, appears in the output.
fn assert_nothing_leaked(what: &str, out: &RunOutcome) {
    let c = canary();
    let all = format!(
        "{}{}{}{}",
        out.tty(),
        out.stdout(),
        out.stderr(),
        out.error.clone().unwrap_or_default()
    );
    assert!(
        !all.contains(&c.secret),
        "{what}: canary contents leaked: {out:?}"
    );
    assert!(
        !all.contains(&c.name),
        "{what}: canary name leaked: {out:?}"
    );
    assert!(
        !all.contains("root:x:0:0"),
        "{what}: /etc/passwd leaked: {out:?}"
    );
}

/// Runs `code` with the canary's path on stdin (so the path is not in the source and
/// any appearance of the name in the output is a leak of a listing).
async fn run_hostile(runtime: &str, code: &str) -> RunOutcome {
    let out = run_with(
        runtime,
        code,
        Some(&canary().path),
        Some(Duration::from_secs(10)),
    )
    .await;
    assert!(
        out.status != RunStatus::Timeout,
        "{runtime}: a filesystem probe should not hang: {out:?}"
    );
    out
}

const C_READ_CANARY: &str = "#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <dirent.h>\nstatic char p[4096];\nstatic void show(const char *path) { FILE *f = fopen(path, \"r\"); if (!f) { puts(\"cannot open\"); return; } char b[256]; size_t n = fread(b, 1, 255, f); b[n] = 0; printf(\"%s\\n\", b); fclose(f); }\nstatic void list(const char *d) { DIR *dir = opendir(d); if (!dir) { puts(\"cannot list\"); return; } struct dirent *e; while ((e = readdir(dir))) printf(\"%s \", e->d_name); puts(\"\"); closedir(dir); }\nint main(void) { if (!fgets(p, sizeof p, stdin)) return 1; p[strcspn(p, \"\\n\")] = 0;\n";

/// Python's mounted base files (plugins.toml): the standard library's zip, and matplotlib's
/// data directory mounted inside it. Each write, removal and rename must be refused.
const PYTHON_WRITE_BASE_FILES: &str = "import os\nbase = '/usr/local/lib/python315.zip'\ndata = base + '/matplotlib/mpl-data'\nfor p in (base, data + '/matplotlibrc'):\n    try:\n        open(p, 'a').write('pwned')\n        print('wrote', p)\n    except Exception as e:\n        print(type(e).__name__)\nfor p in (data + '/fonts', data):\n    try:\n        os.rmdir(p)\n        print('removed', p)\n    except Exception as e:\n        print(type(e).__name__)\nfor p in (base, data + '/matplotlibrc'):\n    try:\n        os.rename(p, '/stolen')\n        print('renamed', p)\n    except Exception as e:\n        print(type(e).__name__)\nprint('done')";

/// Filesystem probes per runtime: each reads the canary path from stdin and tries to get
/// at it (or at other host files), printing only what it got.
fn filesystem_probes(runtime: &str) -> Vec<(&'static str, &'static str)> {
    match runtime {
        "python" => vec![
            ("absolute path", "p = input()\ntry:\n    print(open(p).read())\nexcept Exception as e:\n    print(type(e).__name__)"),
            ("dot-dot walk", "p = input()\ntry:\n    print(open('../' * 12 + p.lstrip('/')).read())\nexcept Exception as e:\n    print(type(e).__name__)"),
            ("symlink out of scratch", "import os\np = input()\nfor t in (p, '../' * 12 + p.lstrip('/')):\n    try:\n        os.symlink(t, 'l')\n        print(open('l').read())\n    except Exception as e:\n        print(type(e).__name__)\n    try: os.unlink('l')\n    except Exception: pass"),
            ("hard link out of scratch", "import os\np = input()\ntry:\n    os.link(p, 'h')\n    print(open('h').read())\nexcept Exception as e:\n    print(type(e).__name__)"),
            ("proc and dev", "for p in ('/proc/self/environ', '/proc/self/cmdline', '/proc/1/maps', '/dev/mem', '/dev/sda', '/etc/passwd', '/etc/hostname'):\n    try:\n        print(open(p, 'rb').read(200))\n    except Exception as e:\n        print(type(e).__name__)"),
            ("list the root and its parent", "import os\nfor d in ('/', '/..', '/../..', '/tmp', '.', '..'):\n    try:\n        print(d, os.listdir(d))\n    except Exception as e:\n        print(d, type(e).__name__)"),
            ("walk the whole tree", "import os\nfor root, dirs, files in os.walk('/'):\n    print(root, len(files))"),
            ("write the read-only base files", PYTHON_WRITE_BASE_FILES),
        ],
        "quickjs" => vec![
            ("absolute path", "const p = std.in.getline(); console.log(std.loadFile(p));"),
            ("dot-dot walk", "const p = std.in.getline(); console.log(std.loadFile('../'.repeat(12) + p.slice(1)));"),
            ("symlink out of scratch", "const p = std.in.getline(); console.log(os.symlink(p, 'l'), std.loadFile('l')); console.log(os.symlink('../'.repeat(12) + p.slice(1), 'l2'), std.loadFile('l2'));"),
            ("proc and dev", "for (const p of ['/proc/self/environ', '/dev/mem', '/etc/passwd', '/etc/hostname']) console.log(p, std.loadFile(p));"),
            ("list the root and its parent", "for (const d of ['/', '/..', '/tmp', '..']) console.log(d, JSON.stringify(os.readdir(d)));"),
            // No "write the read-only base files" probe: quickjs has no base files (its
            // plugins.toml entry mounts nothing), so there is nothing read-only to write.
        ],
        "ruby" => vec![
            ("absolute path", "p = STDIN.gets.strip\nbegin\n  puts File.read(p)\nrescue Exception => e\n  puts e.class\nend"),
            ("dot-dot walk", "p = STDIN.gets.strip\nbegin\n  puts File.read('../' * 12 + p.sub(%r{^/}, ''))\nrescue Exception => e\n  puts e.class\nend"),
            ("symlink out of scratch", "p = STDIN.gets.strip\nbegin\n  File.symlink(p, 'l')\n  puts File.read('l')\nrescue Exception => e\n  puts e.class\nend"),
            ("hard link out of scratch", "p = STDIN.gets.strip\nbegin\n  File.link(p, 'h')\n  puts File.read('h')\nrescue Exception => e\n  puts e.class\nend"),
            ("proc and dev", "['/proc/self/environ', '/dev/mem', '/etc/passwd', '/etc/hostname'].each do |p|\n  begin\n    puts File.binread(p, 200).inspect\n  rescue Exception => e\n    puts e.class\n  end\nend"),
            ("list the root and its parent", "['/', '/..', '/tmp', '..'].each do |d|\n  begin\n    puts d, Dir.entries(d).inspect\n  rescue Exception => e\n    puts e.class\n  end\nend"),
            ("write the read-only base files", "begin\n  File.write('/ruby-3.2.0/.rubyopts.rb', 'pwned')\n  puts 'wrote'\nrescue Exception => e\n  puts e.class\nend"),
        ],
        "php-cgi" => vec![
            ("absolute path", "<?php $p = trim(file_get_contents('php://input')) ?: '/etc/passwd'; foreach ([$p, '/etc/passwd'] as $f) { var_dump(@file_get_contents($f)); }"),
            ("dot-dot walk", "<?php var_dump(@file_get_contents(str_repeat('../', 12) . 'etc/passwd'));"),
            ("symlink out of scratch", "<?php var_dump(@symlink('/etc/passwd', 'l'), @file_get_contents('l'), @symlink(str_repeat('../', 12) . 'etc/passwd', 'l2'), @file_get_contents('l2'));"),
            ("proc and dev", "<?php foreach (['/proc/self/environ', '/dev/mem', '/etc/hostname'] as $p) { var_dump(@file_get_contents($p)); }"),
            ("list the root and its parent", "<?php foreach (['/', '/..', '/tmp', '..'] as $d) { var_dump(@scandir($d)); }"),
            ("glob the root", "<?php var_dump(glob('/*'), glob('/../*'));"),
        ],
        "javascript" | "typescript" => vec![
            ("absolute path", "const fs = require('fs'); const p = readStdin().trim(); try { console.log(fs.readFileSync(p, 'utf8')); } catch (e) { console.log(e.code); }"),
            ("dot-dot walk", "const fs = require('fs'); const p = readStdin().trim(); try { console.log(fs.readFileSync('../'.repeat(12) + p.slice(1), 'utf8')); } catch (e) { console.log(e.code); }"),
            ("copy and rename out of scratch", "const fs = require('fs'); const p = readStdin().trim(); for (const f of [() => fs.copyFileSync(p, 'c'), () => fs.renameSync(p, 'r'), () => fs.copyFileSync('../'.repeat(12) + p.slice(1), 'c')]) { try { f(); } catch (e) { console.log(e.code); } } for (const n of ['c', 'r']) { try { console.log(fs.readFileSync(n, 'utf8')); } catch (e) { console.log(e.code); } }"),
            ("proc and dev", "const fs = require('fs'); for (const p of ['/proc/self/environ', '/dev/mem', '/etc/passwd', '/etc/hostname']) { try { console.log(fs.readFileSync(p, 'utf8')); } catch (e) { console.log(p, e.code); } }"),
            ("list the root and its parent", "const fs = require('fs'); for (const d of ['/', '/..', '/tmp', '..']) { try { console.log(d, JSON.stringify(fs.readdirSync(d))); } catch (e) { console.log(d, e.code); } }"),
            ("walk the whole tree", "const fs = require('fs'); const walk = (d) => { for (const n of fs.readdirSync(d)) { const p = (d === '/' ? '' : d) + '/' + n; console.log(p); try { if (fs.statSync(p).isDirectory()) walk(p); } catch (e) {} } }; walk('/');"),
            ("import a host file", "const p = readStdin().trim(); for (const q of [p, '../'.repeat(12) + p.slice(1)]) { import(q).then((m) => console.log(JSON.stringify(m)), (e) => console.log(e.name)); }"),
            // No "write the read-only base files" probe: javascript mounts nothing.
        ],
        "clang" | "clangpp" => vec![
            ("absolute path", "show(p); return 0; }"),
            ("dot-dot walk", "char q[8192] = \"\"; for (int i = 0; i < 12; i++) strcat(q, \"../\"); strcat(q, p + 1); show(q); return 0; }"),
            ("symlink out of scratch", "printf(\"%d\\n\", symlink(p, \"l\")); show(\"l\"); printf(\"%d\\n\", symlink(\"../../../../../../../../etc/passwd\", \"l2\")); show(\"l2\"); return 0; }"),
            ("hard link out of scratch", "printf(\"%d\\n\", link(p, \"h\")); show(\"h\"); return 0; }"),
            ("proc and dev", "show(\"/proc/self/environ\"); show(\"/dev/mem\"); show(\"/etc/passwd\"); show(\"/etc/hostname\"); return 0; }"),
            ("list the root and its parent", "list(\"/\"); list(\"/..\"); list(\"/tmp\"); list(\"..\"); return 0; }"),
            ("write the read-only base files", "FILE *f = fopen(\"/usr/include/stdio.h\", \"a\"); puts(f ? \"opened\" : \"refused\"); return 0; }"),
        ],
        // Only what a probe got, never an error message (it would name the canary).
        "shell" => vec![
            ("absolute path", "read -r p\ncat \"$p\" 2>/dev/null || echo refused"),
            ("dot-dot walk", "read -r p\ncat \"../../../../../../../../../../../..$p\" 2>/dev/null || echo refused"),
            ("symlink out of scratch", "read -r p\nln -s \"$p\" l 2>/dev/null; cat l 2>/dev/null || echo refused\ncp \"$p\" c 2>/dev/null; cat c 2>/dev/null || echo refused"),
            ("proc and dev", "for p in /proc/self/environ /dev/mem /etc/passwd /etc/hostname; do cat \"$p\" 2>/dev/null || echo \"$p refused\"; done"),
            ("list the root and its parent", "for d in / /.. /tmp ..; do echo \"$d\"; ls -a \"$d\" 2>/dev/null; done\necho /* /../* /../../*"),
            ("walk the whole tree", "find / 2>/dev/null; find /.. 2>/dev/null; grep -rl CANARY / /.. 2>/dev/null; echo done"),
        ],
        "prolog" => vec![
            ("absolute path", ":- initialization(main).\nmain :- read_line_to_string(user_input, P), show(P).\nshow(P) :- catch((open(P, read, S), read_line_to_string(S, L), write(L)), error(E, _), (functor(E, N, _), write(N))), nl."),
            ("dot-dot walk", ":- initialization(main).\nmain :- read_line_to_string(user_input, P), atom_chars(A, P), atom_concat('../../../../../../../../../../../..', A, Q), show(Q).\nshow(P) :- catch((open(P, read, S), read_line_to_string(S, L), write(L)), error(E, _), (functor(E, N, _), write(N))), nl."),
            ("proc and dev", ":- initialization(main).\nmain :- forall(member(P, ['/proc/self/environ', '/dev/mem', '/etc/passwd', '/etc/hostname']), show(P)).\nshow(P) :- catch((open(P, read, S), read_line_to_string(S, L), write(L)), error(E, _), (functor(E, N, _), write(N))), nl."),
            ("list the root and its parent", ":- initialization(main).\nmain :- forall(member(D, ['/', '/..', '/tmp', '..']), (catch((directory_files(D, L), write(L)), error(E, _), (functor(E, N, _), write(N))), nl))."),
            ("consult a host file", ":- initialization(main).\nmain :- read_line_to_string(user_input, P), catch(consult(P), error(E, _), (functor(E, N, _), write(N))), nl."),
        ],
        _ => vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_escapes_fail_in_every_runtime() {
    for runtime in RUNTIMES {
        let probes = filesystem_probes(runtime);
        assert!(probes.len() >= 5, "{runtime}: too few probes");
        for (what, code) in probes {
            let code = if runtime.starts_with("clang") {
                format!("{C_READ_CANARY}{code}")
            } else {
                code.to_string()
            };
            let out = run_hostile(runtime, &code).await;
            if runtime.starts_with("clang") {
                assert_eq!(
                    out.status,
                    RunStatus::Completed,
                    "{runtime} {what}: {out:?}"
                );
                assert_eq!(
                    out.exit_code,
                    Some(0),
                    "{runtime} {what} did not build: {}",
                    out.tty()
                );
            }
            assert_nothing_leaked(&format!("{runtime} {what}"), &out);
            if what == "write the read-only base files" {
                assert!(!out.stdout().contains("wrote"), "{runtime} {what}: {out:?}");
            }
        }
    }
    // The canary is untouched and nothing new appeared beside it.
    let c = canary();
    assert_eq!(std::fs::read_to_string(&c.path).unwrap(), c.secret);
    assert_eq!(std::fs::read_dir(&c.dir).unwrap().count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_files_stay_unchanged() {
    // The mounted base files on the host are read-only to the sandbox: every attempt to
    // change them fails, and nothing changes.
    runbox(); // fetches and unpacks the mounts on a fresh machine
    let mounts = common::cache_dir().join("mounts");
    let before = tree_digest(&mounts);
    assert!(!before.is_empty(), "no mounted files to check");
    for (runtime, code) in [
        ("ruby", "Dir.glob('/ruby-3.2.0/**/*', File::FNM_DOTMATCH).each { |f| begin; File.write(f, 'x'); rescue Exception; end; begin; File.delete(f); rescue Exception; end; begin; File.rename(f, '/stolen'); rescue Exception; end }\nbegin; Dir.rmdir('/ruby-3.2.0'); rescue Exception; end\nputs 'done'"),
        ("ruby", "begin; File.symlink('/main.rb', '/ruby-3.2.0/link'); rescue Exception => e; puts e.class; end\nbegin; File.chmod(0777, '/ruby-3.2.0/.rubyopts.rb'); rescue Exception => e; puts e.class; end\nputs 'done'"),
        ("python", PYTHON_WRITE_BASE_FILES),
    ] {
        let out = run(runtime, code).await;
        // Every attempt is refused (and said so), and the program goes on to the end.
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert!(out.stdout().trim().ends_with("done"), "{runtime}: {out:?}");
        for done in ["wrote", "removed", "renamed"] {
            assert!(!out.stdout().contains(done), "{runtime}: {out:?}");
        }
    }
    assert_eq!(tree_digest(&mounts), before, "a mounted base file changed");
}

/// Paths, sizes and contents of every file under `dir`, as one string.
fn tree_digest(dir: &std::path::Path) -> String {
    let mut entries = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let mut bytes = Vec::new();
                std::fs::File::open(&p)
                    .unwrap()
                    .read_to_end(&mut bytes)
                    .unwrap();
                entries.push(format!(
                    "{} {} {:x}",
                    p.display(),
                    bytes.len(),
                    simple_hash(&bytes)
                ));
            }
        }
    }
    entries.sort();
    entries.join("\n")
}

fn simple_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_and_host_commands_are_unreachable() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tport, uport) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let cases: Vec<(&str, String)> = vec![
        ("python", format!("import socket\ntry:\n    s = socket.socket()\n    s.connect(('127.0.0.1', {tport}))\n    print('connected')\nexcept Exception as e:\n    print(type(e).__name__)\ntry:\n    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    u.sendto(b'x', ('127.0.0.1', {uport}))\n    print('sent')\nexcept Exception as e:\n    print(type(e).__name__)\ntry:\n    print(socket.gethostbyname('localhost'))\nexcept Exception as e:\n    print(type(e).__name__)")),
        ("python", format!("import urllib.request\ntry:\n    urllib.request.urlopen('http://127.0.0.1:{tport}/', timeout=2)\n    print('fetched')\nexcept Exception as e:\n    print(type(e).__name__)")),
        ("python", "import os, subprocess\nfor f in (lambda: os.system('id'), lambda: subprocess.run(['id']), lambda: os.popen('id').read()):\n    try:\n        print(f())\n    except Exception as e:\n        print(type(e).__name__)".to_string()),
        ("quickjs", format!("try {{ console.log(std.urlGet('http://127.0.0.1:{tport}/')); }} catch (e) {{ console.log(String(e)); }}\ntry {{ console.log(os.exec(['id'])); }} catch (e) {{ console.log(String(e)); }}\ntry {{ console.log(std.popen('id', 'r')); }} catch (e) {{ console.log(String(e)); }}")),
        ("ruby", format!("begin\n  require 'socket'\n  TCPSocket.new('127.0.0.1', {tport})\n  puts 'connected'\nrescue Exception => e\n  puts e.class\nend\nbegin\n  puts `id`\nrescue Exception => e\n  puts e.class\nend\nbegin\n  p system('id')\nrescue Exception => e\n  puts e.class\nend")),
        ("clang", "#include <stdio.h>\n#include <stdlib.h>\nint main(void) { FILE *p = popen(\"id\", \"r\"); printf(\"%p %d\\n\", (void *)p, system(\"id\")); return 0; }".to_string()),
        ("clang", format!("#include <sys/socket.h>\n#include <netinet/in.h>\n#include <stdio.h>\nint main(void) {{ int s = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in a = {{0}}; a.sin_family = AF_INET; a.sin_port = htons({tport}); a.sin_addr.s_addr = htonl(0x7f000001); printf(\"%d %d\\n\", s, connect(s, (struct sockaddr *)&a, sizeof a)); return 0; }}")),
        ("javascript", "for (const m of ['net', 'http', 'https', 'dgram', 'child_process']) { try { require(m); console.log('loaded ' + m); } catch (e) { console.log(m, e.name); } }\nconsole.log(typeof fetch, typeof WebSocket, typeof XMLHttpRequest);".to_string()),
        ("typescript", "import * as net from 'node:net';\nconsole.log('loaded ' + typeof net);".to_string()),
        ("typescript", "for (const m of ['net', 'http', 'https', 'dgram', 'child_process']) { try { require(m); console.log('loaded ' + m); } catch (e: unknown) { console.log(m, (e as Error).name); } }\nconsole.log(typeof fetch, typeof WebSocket, typeof XMLHttpRequest);".to_string()),
        // (Not `id`: bashkit's is a built-in that prints a made-up `uid=1000(sandbox)`.
        // `python3` is the sandbox's own python, a command of the shell, not the host's.)
        ("shell", format!("curl -s http://127.0.0.1:{tport}/ && echo fetched\nwget -q -O- http://127.0.0.1:{tport}/ && echo fetched\n(echo x > /dev/tcp/127.0.0.1/{tport}) 2>/dev/null && echo connected\nnc 127.0.0.1 {tport} < /dev/null && echo connected\npython3 -c \"import sys; print('loaded host python' if sys.platform != 'wasi' else 'the sandbox python')\"\nbash -c 'echo x > /dev/udp/127.0.0.1/{uport}' 2>/dev/null && echo sent")),
        ("prolog", format!(":- initialization(main).\nmain :- catch((client('127.0.0.1:{tport}', _, _, S, []), write(S), write(connected)), error(E, _), (functor(E, N, _), write(N))), nl, catch((shell('id', C), write(C)), error(F, _), (functor(F, M, _), write(M))), nl.")),
        ("php-cgi", format!("<?php var_dump(@fsockopen('127.0.0.1', {tport}), @file_get_contents('http://127.0.0.1:{tport}/'), @fsockopen('udp://127.0.0.1', {uport}), function_exists('shell_exec') ? @shell_exec('id') : 'no shell_exec', function_exists('exec') ? @exec('id') : 'no exec', @gethostbyname('localhost'));")),
    ];
    for (runtime, code) in cases {
        let out = run_with(runtime, &code, None, Some(Duration::from_secs(5))).await;
        // The run's own time (queueing for a slot of the shared runbox is not the probe's).
        assert!(
            out.duration.saturating_sub(out.build_time) < Duration::from_secs(7),
            "{runtime}: network probe hung: {out:?}"
        );
        assert!(
            !out.tty().contains("connected")
                && !out.tty().contains("fetched")
                && !out.tty().contains("loaded "),
            "{runtime}: {out:?}"
        );
        assert!(
            !out.tty().contains("uid="),
            "{runtime}: ran a host command: {out:?}"
        );
        assert!(
            tcp.accept().is_err(),
            "{runtime}: a TCP connection reached the host: {out:?}"
        );
        let mut buf = [0u8; 16];
        assert!(
            udp.recv_from(&mut buf).is_err(),
            "{runtime}: a UDP datagram reached the host"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_reveals_nothing_of_the_host() {
    let host_cwd = std::env::current_dir().unwrap().display().to_string();
    let host_name = std::fs::read_to_string("/etc/hostname")
        .unwrap_or_default()
        .trim()
        .to_string();
    let cases = [
        ("python", "import os, sys\nprint(dict(os.environ))\nprint(os.getcwd(), sys.argv, sys.executable)\nprint(os.uname() if hasattr(os, 'uname') else 'no uname')"),
        ("quickjs", "console.log(JSON.stringify(std.getenviron()), os.getcwd()[0], JSON.stringify(scriptArgs));"),
        ("ruby", "puts ENV.to_h.inspect, Dir.pwd, $0, ARGV.inspect, $PROGRAM_NAME"),
        ("php-cgi", "<?php var_dump(getenv(), $_SERVER, getcwd(), php_uname(), $argv ?? null);"),
        ("clang", "#include <stdio.h>\n#include <unistd.h>\nextern char **environ;\nint main(int argc, char **argv) { for (char **e = environ; *e; e++) puts(*e); char cwd[512]; puts(getcwd(cwd, sizeof cwd) ? cwd : \"no cwd\"); for (int i = 0; i < argc; i++) puts(argv[i]); return 0; }"),
        ("javascript", "console.log(JSON.stringify(process.env), JSON.stringify(process.argv), typeof process.cwd === 'function' ? process.cwd() : 'no cwd');"),
        ("typescript", "const env: Record<string, string> = process.env;\nconsole.log(JSON.stringify(env), JSON.stringify(process.argv), typeof process.cwd === 'function' ? process.cwd() : 'no cwd');"),
        ("shell", "env; set; echo \"$PWD|$0|$HOME|$*\"; hostname; uname -a; pwd"),
        ("prolog", ":- initialization(main).\nmain :- (getenv('HOME', H) -> write(H) ; write(nohome)), nl, current_prolog_flag(argv, A), write(A), nl, working_directory(D, D), write(D), nl."),
        ("clangpp", "#include <cstdio>\n#include <unistd.h>\nextern char **environ;\nint main(int argc, char **argv) { for (char **e = environ; *e; e++) std::puts(*e); for (int i = 0; i < argc; i++) std::puts(argv[i]); return 0; }"),
    ];
    for (runtime, code) in cases {
        let out = run(runtime, code).await;
        assert_nothing_leaked(runtime, &out);
        for (what, value) in [("cwd", &host_cwd), ("hostname", &host_name)] {
            if value.len() > 3 {
                assert!(
                    !out.tty().contains(value.as_str()),
                    "{runtime}: host {what} {value:?} visible: {}",
                    out.tty()
                );
            }
        }
        for (key, value) in std::env::vars() {
            // Long values only: short ones ("1", "C.UTF-8") appear by chance.
            if value.len() >= 12 {
                assert!(
                    !out.tty().contains(&value),
                    "{runtime}: host variable {key} visible: {}",
                    out.tty()
                );
            }
        }
    }
}

/// CPU probes that must end by the deadline (or sooner, if the runtime has its own guard).
fn cpu_probes(runtime: &str) -> Vec<(&'static str, &'static str)> {
    match runtime {
        "python" => vec![
            ("loop in an exception handler", "while True:\n    try:\n        raise ValueError()\n    except ValueError:\n        pass"),
            ("catastrophic regex", "import re\nprint(re.match(r'(a+)+$', 'a' * 64 + 'b'))"),
            ("sleep", "import time\nwhile True:\n    try:\n        time.sleep(100)\n    except OSError:\n        pass"),
            ("loop catching everything", "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass"),
        ],
        "quickjs" => vec![
            ("loop in an exception handler", "for (;;) { try { throw new Error('x'); } catch (e) {} }"),
            ("catastrophic regex", "console.log(/(a+)+$/.test('a'.repeat(64) + 'b'));"),
            ("sleep", "os.sleep(100000);"),
            ("timer that never ends", "os.setTimeout(function f() { os.setTimeout(f, 0); }, 0);"),
        ],
        "ruby" => vec![
            ("loop in an exception handler", "loop do\n  begin\n    raise 'x'\n  rescue\n  end\nend"),
            ("catastrophic regex", "p(/(a+)+\\d$/ =~ 'a' * 64 + 'b')\nloop {}"),
            ("sleep", "sleep 100"),
            ("loop rescuing everything", "loop do\n  begin\n    loop {}\n  rescue Exception\n  end\nend"),
        ],
        "php-cgi" => vec![
            ("loop in an exception handler", "<?php while (true) { try { throw new Exception('x'); } catch (Exception $e) {} }"),
            ("catastrophic regex", "<?php ini_set('pcre.backtrack_limit', '1000000000'); ini_set('pcre.jit', '0'); while (true) { preg_match('/(a+)+$/', str_repeat('a', 64) . 'b'); }"),
            ("sleep", "<?php sleep(100); while (true) {}"),
            ("set_time_limit cannot lift it", "<?php set_time_limit(0); ignore_user_abort(true); while (true) {}"),
        ],
        "javascript" | "typescript" => vec![
            ("loop in an exception handler", "for (;;) { try { throw new Error('x'); } catch (e) {} }"),
            ("catastrophic regex", "for (;;) /(a+)+$/.test('a'.repeat(64) + 'b');"),
            ("timer that never ends", "setTimeout(function f() { setTimeout(f, 0); }, 0);"),
            ("promise loop", "(async () => { for (;;) await null; })();"),
        ],
        "clang" => vec![
            ("busy loop", "int main(void) { volatile unsigned long n = 0; for (;;) n++; }"),
            ("sleep", "#include <unistd.h>\nint main(void) { sleep(100); for (volatile int i = 0; ; i++); }"),
            ("spin reading the clock", "#include <time.h>\nint main(void) { struct timespec t; for (;;) clock_gettime(CLOCK_MONOTONIC, &t); }"),
        ],
        "clangpp" => vec![
            ("busy loop", "int main() { volatile unsigned long n = 0; for (;;) n = n + 1; }"),
            ("recursion in a loop", "static int f(int n) { return n <= 1 ? n : f(n - 1) + f(n - 2); }\nint main() { for (;;) { volatile int x = f(35); (void)x; } }"),
        ],
        "shell" => vec![
            ("busy loop", "while :; do :; done"),
            ("arithmetic loop", "i=0; while true; do i=$((i + 1)); done"),
            ("sleep then loop", "sleep 100; while :; do :; done"),
            ("awk loop", "awk 'BEGIN { while (1) n++ }'"),
        ],
        "prolog" => vec![
            ("recursion", ":- initialization(spin).\nspin :- spin."),
            ("failure-driven loop", ":- initialization((repeat, fail))."),
            ("catch loop", ":- initialization(l).\nl :- catch(throw(x), _, true), l."),
        ],
        _ => vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_burners_end_by_the_deadline() {
    let deadline = Duration::from_secs(2);
    let mut tasks = Vec::new();
    for runtime in RUNTIMES {
        for (what, code) in cpu_probes(runtime) {
            tasks.push(tokio::spawn(async move {
                let started = Instant::now();
                let out = run_with(runtime, code, None, Some(deadline)).await;
                (runtime, what, started.elapsed(), out)
            }));
        }
    }
    assert!(tasks.len() >= 16);
    for t in tasks {
        let (runtime, what, took, out) = t.await.unwrap();
        // Queueing for a slot counts in `took`, so compare the run's own duration, less
        // what compiling took (the compile has a budget of its own).
        let ran = out.duration.saturating_sub(out.build_time);
        assert!(
            ran < deadline + Duration::from_secs(1),
            "{runtime} {what}: {took:?} {out:?}"
        );
        // Every probe runs forever: ending any other way means it did not burn the CPU
        // (or sleep) it was meant to.
        assert_eq!(out.status, RunStatus::Timeout, "{runtime} {what}: {out:?}");
        assert!(ran >= deadline, "{runtime} {what}: early timeout");
    }
}

fn memory_probes(runtime: &str) -> Vec<(&'static str, &'static str)> {
    match runtime {
        "python" => vec![
            ("huge single allocation", "b = bytearray(2**40)"),
            ("many small allocations", "x = []\nwhile True:\n    x.append([0] * 1000)"),
            ("deep recursion", "def f(n):\n    return f(n + 1) + 1\nf(0)"),
            ("deep C recursion", "import json\njson.loads('[' * 1000000 + ']' * 1000000)"),
        ],
        "quickjs" => vec![
            ("huge single allocation", "new ArrayBuffer(2 ** 40);"),
            ("many small allocations", "const a = []; for (;;) a.push({x: [1, 2, 3]});"),
            ("deep recursion", "function f(n) { return f(n + 1) + 1; } f(0);"),
            ("deep JSON nesting", "JSON.parse('['.repeat(1000000) + ']'.repeat(1000000));"),
        ],
        "ruby" => vec![
            ("huge single allocation", "'x' * (2**40)"),
            ("many small allocations", "a = []\nloop { a << [1, 2, 3] }"),
            ("deep recursion", "def f(n) = f(n + 1) + 1\nf(0)"),
        ],
        "php-cgi" => vec![
            ("huge single allocation", "<?php $s = str_repeat('x', 2 ** 40);"),
            ("many small allocations", "<?php $a = []; while (true) { $a[] = [1, 2, 3]; }"),
            ("deep recursion", "<?php function f($n) { return f($n + 1) + 1; } f(0);"),
        ],
        "javascript" | "typescript" => vec![
            ("huge single allocation", "new ArrayBuffer(2 ** 40);"),
            ("many small allocations", "const a = []; for (;;) a.push({x: [1, 2, 3]});"),
            ("deep recursion", "function f(n) { return f(n + 1) + 1; } f(0);"),
            ("deep JSON nesting", "JSON.parse('['.repeat(1000000) + ']'.repeat(1000000));"),
        ],
        "clang" | "clangpp" => vec![
            ("huge single allocation", "#include <stdlib.h>\n#include <stdio.h>\nint main(void) { void *volatile p = malloc((size_t)1 << 31); if (!p) { puts(\"no memory\"); return 1; } return 0; }"),
            ("many small allocations", "#include <stdlib.h>\n#include <string.h>\nint main(void) { for (;;) { char *volatile p = (char *)malloc(4096); if (!p) return 2; memset(p, 1, 4096); } }"),
            ("deep recursion", "static int f(volatile int n) { volatile char pad[256]; pad[0] = (char)n; return f(n + 1) + pad[0]; }\nint main(void) { return f(0); }"),
        ],
        "shell" => vec![
            ("string doubling", "s=xxxxxxxxxxxxxxxx; while :; do s=\"$s$s\"; done"),
            ("array doubling", "a=(xxxxxxxxxxxxxxxx); while :; do a=(\"${a[@]}\" \"${a[@]}\"); done"),
            ("deep recursion", "f() { f; }; f"),
            ("awk string doubling", "awk 'BEGIN { s = \"xxxxxxxxxxxxxxxx\"; while (1) s = s s }'"),
        ],
        "prolog" => vec![
            ("list growth", ":- initialization(g([])).\ng(L) :- length(X, 100000), g([X|L])."),
            ("deep recursion", ":- initialization(f(0)).\nf(N) :- M is N + 1, f(M), true."),
            ("atom doubling", ":- initialization(g(x)).\ng(A) :- atom_concat(A, A, B), g(B)."),
        ],
        _ => vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_attacks_end_cleanly_and_the_host_survives() {
    for runtime in RUNTIMES {
        for (what, code) in memory_probes(runtime) {
            // A small cap keeps the slow allocators (CPython in wasm) quick to hit it.
            // Trealla, refused an atom's memory under a small cap, retries until the
            // deadline instead of failing (measured on atom doubling: at 96 and 256 MiB;
            // at 64 MiB too once the prelude grew with the stable sorts); at the default
            // 512 MiB it reports "no memory" at once. It gets the default cap here.
            let cap = if *runtime == "prolog" {
                512 << 20
            } else {
                64 << 20
            };
            let out = run_limited(runtime, code, Duration::from_secs(20), cap).await;
            let ok = match out.status {
                RunStatus::Completed => out.exit_code != Some(0),
                RunStatus::Crashed | RunStatus::Terminated => out.error.is_some(),
                RunStatus::Timeout => false,
            };
            assert!(ok, "{runtime} {what}: {out:?}");
        }
        let again = run(runtime, hello_45(runtime)).await;
        assert_eq!(
            again.stdout(),
            "45\n",
            "{runtime} after memory attacks: {again:?}"
        );
    }
}

/// A program printing `45`, per runtime.
fn hello_45(runtime: &str) -> &'static str {
    match runtime {
        "php-cgi" => "<?php echo 45, \"\\n\";",
        "python" => "print(45)",
        "ruby" => "puts 45",
        "clang" | "clangpp" => "#include <stdio.h>\nint main(void) { puts(\"45\"); return 0; }",
        "shell" => "echo 45",
        "prolog" => ":- initialization((write(45), nl)).",
        _ => "console.log(45)",
    }
}

fn output_probes(runtime: &str) -> Vec<(&'static str, &'static str)> {
    match runtime {
        "python" => vec![
            ("stderr flood", "import sys\nwhile True:\n    sys.stderr.write('e' * 65536)"),
            ("one giant line", "import sys\nwhile True:\n    sys.stdout.write('y' * 1000)"),
        ],
        "quickjs" => vec![
            ("stderr flood", "const s = 'e'.repeat(65536); for (;;) std.err.puts(s);"),
            ("one giant line", "for (;;) std.out.puts('y'.repeat(1000));"),
        ],
        "ruby" => vec![
            ("stderr flood", "s = 'e' * 65536\nloop { $stderr.write(s) }"),
            ("one giant line", "loop { print 'y' * 1000 }"),
        ],
        "php-cgi" => vec![
            ("stderr flood", "<?php $e = fopen('php://stderr', 'w'); if (!$e) { while (true) { error_log(str_repeat('e', 65536)); } } while (true) { fwrite($e, str_repeat('e', 65536)); }"),
            ("one giant line", "<?php while (true) { echo str_repeat('y', 1000); }"),
        ],
        "javascript" | "typescript" => vec![
            ("stderr flood", "const s = 'e'.repeat(65536); for (;;) console.error(s);"),
            ("one giant line", "for (;;) process.stdout.write('y'.repeat(1000));"),
        ],
        "clang" | "clangpp" => vec![
            ("stdout flood", "#include <stdio.h>\n#include <string.h>\nint main(void) { static char b[65536]; memset(b, 'x', sizeof b); for (;;) fwrite(b, 1, sizeof b, stdout); }"),
            ("stderr flood", "#include <stdio.h>\nint main(void) { for (;;) fputs(\"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\", stderr); }"),
            ("one giant line", "#include <stdio.h>\nint main(void) { for (;;) putchar('y'); }"),
        ],
        "shell" => vec![
            ("stderr flood", "s=eeeeeeeeeeeeeeee; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do s=\"$s$s\"; done; while :; do echo \"$s\" >&2; done"),
            ("one giant line", "while :; do printf yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done"),
        ],
        "prolog" => vec![
            ("stderr flood", ":- initialization(f).\nf :- repeat, write(user_error, eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee), fail."),
            ("one giant line", ":- initialization(f).\nf :- repeat, write(yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy), fail."),
        ],
        _ => vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_attacks_are_capped() {
    let cap = runbox().limits().output_bytes;
    for runtime in RUNTIMES {
        for (what, code) in output_probes(runtime) {
            let out = run_with(runtime, code, None, Some(Duration::from_secs(20))).await;
            // The run's own time (queueing for a slot of the shared runbox is not its).
            assert!(
                out.duration.saturating_sub(out.build_time) < Duration::from_secs(5),
                "{runtime} {what}: slow: {out:?}"
            );
            assert_eq!(
                out.status,
                RunStatus::Terminated,
                "{runtime} {what}: {:?}",
                out.error
            );
            assert!(out.truncated, "{runtime} {what}");
            assert!(
                out.stdout().len() <= cap && out.stderr().len() <= cap,
                "{runtime} {what}"
            );
            assert!(out.tty().len() <= 2 * cap, "{runtime} {what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_trickle_is_cut_at_the_deadline_with_its_output_kept() {
    let cases = [
        ("python", "import time\nn = 0\nwhile True:\n    t = time.time()\n    while time.time() - t < 0.1: pass\n    print('tick', n, flush=True)\n    n += 1"),
        ("quickjs", "for (let n = 0; ; n++) { const t = Date.now(); while (Date.now() - t < 100); console.log('tick', n); }"),
        ("ruby", "n = 0\nloop do\n  t = Time.now\n  while Time.now - t < 0.1; end\n  puts \"tick #{n}\"\n  n += 1\nend"),
        ("php-cgi", "<?php for ($n = 0; ; $n++) { $t = microtime(true); while (microtime(true) - $t < 0.1); echo \"tick $n\\n\"; flush(); }"),
        ("javascript", "for (let n = 0; ; n++) { const t = Date.now(); while (Date.now() - t < 100); console.log('tick', n); }"),
        ("shell", "n=0; while :; do sleep 0.1; echo \"tick $n\"; n=$((n + 1)); done"),
        ("typescript", "for (let n: number = 0; ; n++) { const t = Date.now(); while (Date.now() - t < 100); console.log('tick', n); }"),
        ("clang", "#include <stdio.h>\n#include <time.h>\nint main(void) { for (int n = 0; ; n++) { struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); do clock_gettime(CLOCK_MONOTONIC, &b); while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000000L); printf(\"tick %d\\n\", n); fflush(stdout); } }"),
    ];
    for (runtime, code) in cases {
        let out = run_with(runtime, code, None, Some(Duration::from_millis(1500))).await;
        assert_eq!(out.status, RunStatus::Timeout, "{runtime}: {out:?}");
        assert!(
            out.stdout().contains("tick 3"),
            "{runtime}: output before the deadline lost: {out:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_output_is_replaced_not_fatal() {
    let cases = [
        ("python", "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\xc3 end\\n')\nsys.stderr.buffer.write(b'\\x80 err\\n')"),
        ("quickjs", "std.out.write(new Uint8Array([111, 107, 32, 255, 254, 10]).buffer, 0, 6);"),
        ("ruby", "$stdout.write(\"ok \\xff\\xfe end\\n\".b)\n$stderr.write(\"\\x80 err\\n\".b)"),
        ("php-cgi", "<?php echo \"ok \\xff\\xfe end\\n\";"),
        ("clang", "#include <stdio.h>\nint main(void) { fwrite(\"ok \\xff\\xfe end\\n\", 1, 10, stdout); return 0; }"),
    ];
    for (runtime, code) in cases {
        let out = run(runtime, code).await;
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert!(out.stdout().starts_with("ok "), "{runtime}: {out:?}");
        assert!(out.stdout().contains('\u{FFFD}'), "{runtime}: {out:?}");
        // The raw bytes are kept for a terminal.
        assert!(out.output.stdout.contains(&0xff), "{runtime}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_do_not_see_each_other() {
    // One run writes a file and keeps running; another looks for it at the same time.
    let writer = tokio::spawn(run_with(
        "python",
        "open('/shared.txt', 'w').write('secret')\nimport time\nt = time.time()\nwhile time.time() - t < 1.5: pass\nprint(open('/shared.txt').read())",
        None,
        None,
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    for runtime in RUNTIMES {
        let code = match *runtime {
            "python" => "import os\nprint(os.path.exists('/shared.txt'), os.listdir('/'))",
            "quickjs" => "console.log(std.open('/shared.txt', 'r') !== null, JSON.stringify(os.readdir('/')[0]))",
            "ruby" => "puts File.exist?('/shared.txt'), Dir.entries('/').inspect",
            "clang" | "clangpp" => "#include <stdio.h>\nint main(void) { puts(fopen(\"/shared.txt\", \"r\") ? \"true\" : \"false\"); return 0; }",
            _ => "<?php var_dump(file_exists('/shared.txt'), scandir('/'));",
        };
        let out = run(runtime, code).await;
        assert!(
            !out.stdout().contains("shared.txt") && !out.stdout().contains("true"),
            "{runtime}: {out:?}"
        );
    }
    let w = writer.await.unwrap();
    assert_eq!(w.stdout(), "secret\n", "{w:?}");
}
