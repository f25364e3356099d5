//! The scratch-space cap (256 MiB of file data, 10,000 files and directories per run):
//! programs that fill the disk get ENOSPC quickly, the host keeps nothing of the run,
//! and normal file use still works, including space coming back when files go away.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runbox::service::{LimitSettings, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::common;
use crate::common::{run, run_with, runbox, ATTACKED_RUNTIMES};

/// The runtimes whose scratch limits are attacked: all attacked runtimes but `prolog`
/// (the limits are the host's, the same for every runtime; Trealla's file I/O adds no
/// path to them that the others lack).
fn runtimes() -> impl Iterator<Item = &'static str> {
    ATTACKED_RUNTIMES.iter().copied().filter(|r| *r != "prolog")
}

/// What each runtime's C library says for ENOSPC.
const NO_SPACE: &str = "No space left on device";

/// A program that creates the file `marker` in scratch first, pauses, then writes
/// 1024 chunks of 1 MiB and prints `wrote N MB` or `stopped after N MB: <error>`.
fn fill_disk(runtime: &str, marker: &str) -> String {
    let code = match runtime {
        "python" => {
            "import time\n\
             open('/MARKER', 'w').close()\n\
             t = time.time()\n\
             while time.time() - t < 0.3:\n\
             \x20   pass  # this Python has no sleep\n\
             chunk = b'x' * (1 << 20)\n\
             n = 0\n\
             try:\n\
             \x20   with open('/fill.bin', 'wb') as f:\n\
             \x20       for i in range(1024):\n\
             \x20           f.write(chunk)\n\
             \x20           n += 1\n\
             \x20   print('wrote', n, 'MB')\n\
             except OSError as e:\n\
             \x20   print('stopped after', n, 'MB:', e.strerror)\n"
        }
        "quickjs" => {
            "std.open('/MARKER', 'w').close();\n\
             os.sleep(300);\n\
             const buf = new ArrayBuffer(1 << 20);\n\
             const fd = os.open('/fill.bin', os.O_WRONLY | os.O_CREAT | os.O_TRUNC);\n\
             let n = 0, r = 0;\n\
             for (let i = 0; i < 1024; i++) {\n\
             \x20 r = os.write(fd, buf, 0, buf.byteLength);\n\
             \x20 if (r !== buf.byteLength) break;\n\
             \x20 n++;\n\
             }\n\
             os.close(fd);\n\
             console.log(r < 0 ? 'stopped after ' + n + ' MB: ' + std.strerror(-r) : 'wrote ' + n + ' MB');\n"
        }
        "ruby" => {
            "File.write('/MARKER', '')\n\
             sleep 0.3\n\
             chunk = 'x' * (1 << 20)\n\
             n = 0\n\
             begin\n\
             \x20 File.open('/fill.bin', 'wb') do |f|\n\
             \x20   1024.times { f.write(chunk); n += 1 }\n\
             \x20 end\n\
             \x20 puts \"wrote #{n} MB\"\n\
             rescue SystemCallError => e\n\
             \x20 puts \"stopped after #{n} MB: #{e.message}\"\n\
             end\n"
        }
        "php-cgi" => {
            "<?php\n\
             touch('/MARKER');\n\
             usleep(300000);\n\
             $chunk = str_repeat('x', 1 << 20);\n\
             $f = fopen('/fill.bin', 'wb');\n\
             $n = 0;\n\
             for ($i = 0; $i < 1024; $i++) {\n\
             \x20   if (@fwrite($f, $chunk) !== strlen($chunk)) break;\n\
             \x20   $n++;\n\
             }\n\
             fclose($f);\n\
             echo $i < 1024 ? \"stopped after $n MB: \" . error_get_last()['message'] : \"wrote $n MB\", \"\\n\";\n"
        }
        // Valid C and C++ alike.
        "clang" | "clangpp" => {
            "#include <stdio.h>\n\
             #include <string.h>\n\
             #include <errno.h>\n\
             #include <time.h>\n\
             static char chunk[1 << 20];\n\
             int main(void) {\n\
             \x20 fclose(fopen(\"/MARKER\", \"w\"));\n\
             \x20 struct timespec pause = {0, 300000000};\n\
             \x20 nanosleep(&pause, 0);\n\
             \x20 memset(chunk, 'x', sizeof chunk);\n\
             \x20 FILE *f = fopen(\"/fill.bin\", \"wb\");\n\
             \x20 int n = 0;\n\
             \x20 for (int i = 0; i < 1024; i++) {\n\
             \x20   if (fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk || fflush(f) != 0) {\n\
             \x20     printf(\"stopped after %d MB: %s\\n\", n, strerror(errno));\n\
             \x20     return 0;\n\
             \x20   }\n\
             \x20   n++;\n\
             \x20 }\n\
             \x20 fclose(f);\n\
             \x20 printf(\"wrote %d MB\\n\", n);\n\
             \x20 return 0;\n\
             }\n"
        }
        "javascript" | "typescript" => {
            "const fs = require('fs');\n\
             fs.writeFileSync('/MARKER', '');\n\
             const t = Date.now();\n\
             while (Date.now() - t < 300);\n\
             const chunk = new Uint8Array(1 << 20).fill(120);\n\
             let n = 0;\n\
             try {\n\
             \x20 fs.writeFileSync('/fill.bin', '');\n\
             \x20 for (let i = 0; i < 1024; i++) { fs.appendFileSync('/fill.bin', chunk); n++; }\n\
             \x20 console.log('wrote ' + n + ' MB');\n\
             } catch (e) {\n\
             \x20 console.log('stopped after ' + n + ' MB: ' + e.message);\n\
             }\n"
        }
        "shell" => {
            ": > /MARKER\n\
             sleep 0.3\n\
             s=xxxxxxxxxxxxxxxx\n\
             for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do s=\"$s$s\"; done\n\
             printf '%s' \"$s\" > /chunk\n\
             : > /fill.bin\n\
             n=0\n\
             while [ $n -lt 1024 ]; do\n\
             \x20 if ! cat /chunk >> /fill.bin; then echo \"stopped after $n MB: see stderr\"; exit 0; fi\n\
             \x20 n=$((n + 1))\n\
             done\n\
             echo \"wrote $n MB\"\n"
        }
        other => panic!("no program for {other}"),
    };
    code.replace("MARKER", marker)
}

/// A program that creates the file `marker`, pauses, then tries to create 100,000 small
/// files and prints `created N` or `stopped after N files: <error>`.
fn many_files(runtime: &str, marker: &str) -> String {
    let code = match runtime {
        "python" => {
            "import os, time\n\
             open('/MARKER', 'w').close()\n\
             t = time.time()\n\
             while time.time() - t < 0.3:\n\
             \x20   pass  # this Python has no sleep\n\
             os.mkdir('/d')\n\
             n = 0\n\
             try:\n\
             \x20   for i in range(100000):\n\
             \x20       with open(f'/d/{i}', 'w') as f:\n\
             \x20           f.write('x')\n\
             \x20       n += 1\n\
             \x20   print('created', n)\n\
             except OSError as e:\n\
             \x20   print('stopped after', n, 'files:', e.strerror)\n"
        }
        "quickjs" => {
            "std.open('/MARKER', 'w').close();\n\
             os.sleep(300);\n\
             os.mkdir('/d');\n\
             let n = 0, msg = null;\n\
             for (let i = 0; i < 100000; i++) {\n\
             \x20 const err = {};\n\
             \x20 const f = std.open('/d/' + i, 'w', err);\n\
             \x20 if (f === null) { msg = std.strerror(err.errno); break; }\n\
             \x20 f.puts('x');\n\
             \x20 f.close();\n\
             \x20 n++;\n\
             }\n\
             console.log(msg === null ? 'created ' + n : 'stopped after ' + n + ' files: ' + msg);\n"
        }
        "ruby" => {
            "File.write('/MARKER', '')\n\
             sleep 0.3\n\
             Dir.mkdir('/d')\n\
             n = 0\n\
             begin\n\
             \x20 100_000.times { |i| File.write(\"/d/#{i}\", 'x'); n += 1 }\n\
             \x20 puts \"created #{n}\"\n\
             rescue SystemCallError => e\n\
             \x20 puts \"stopped after #{n} files: #{e.message}\"\n\
             end\n"
        }
        "php-cgi" => {
            "<?php\n\
             touch('/MARKER');\n\
             usleep(300000);\n\
             mkdir('/d');\n\
             $n = 0;\n\
             $msg = null;\n\
             for ($i = 0; $i < 100000; $i++) {\n\
             \x20   if (@file_put_contents(\"/d/$i\", 'x') === false) { $msg = error_get_last()['message']; break; }\n\
             \x20   $n++;\n\
             }\n\
             echo $msg === null ? \"created $n\" : \"stopped after $n files: $msg\", \"\\n\";\n"
        }
        "clang" | "clangpp" => {
            "#include <stdio.h>\n\
             #include <string.h>\n\
             #include <errno.h>\n\
             #include <time.h>\n\
             #include <sys/stat.h>\n\
             int main(void) {\n\
             \x20 fclose(fopen(\"/MARKER\", \"w\"));\n\
             \x20 struct timespec pause = {0, 300000000};\n\
             \x20 nanosleep(&pause, 0);\n\
             \x20 mkdir(\"/d\", 0755);\n\
             \x20 int n = 0;\n\
             \x20 char path[64];\n\
             \x20 for (int i = 0; i < 100000; i++) {\n\
             \x20   snprintf(path, sizeof path, \"/d/%d\", i);\n\
             \x20   FILE *f = fopen(path, \"w\");\n\
             \x20   if (!f) {\n\
             \x20     printf(\"stopped after %d files: %s\\n\", n, strerror(errno));\n\
             \x20     return 0;\n\
             \x20   }\n\
             \x20   fputc('x', f);\n\
             \x20   fclose(f);\n\
             \x20   n++;\n\
             \x20 }\n\
             \x20 printf(\"created %d\\n\", n);\n\
             \x20 return 0;\n\
             }\n"
        }
        "javascript" | "typescript" => {
            "const fs = require('fs');\n\
             fs.writeFileSync('/MARKER', '');\n\
             const t = Date.now();\n\
             while (Date.now() - t < 300);\n\
             fs.mkdirSync('/d');\n\
             let n = 0;\n\
             try {\n\
             \x20 for (let i = 0; i < 100000; i++) { fs.writeFileSync('/d/' + i, 'x'); n++; }\n\
             \x20 console.log('created ' + n);\n\
             } catch (e) {\n\
             \x20 console.log('stopped after ' + n + ' files: ' + e.message);\n\
             }\n"
        }
        "shell" => {
            ": > /MARKER\n\
             sleep 0.3\n\
             mkdir /d\n\
             n=0\n\
             while [ $n -lt 100000 ]; do\n\
             \x20 if ! echo x > /d/$n; then echo \"stopped after $n files: see stderr\"; exit 0; fi\n\
             \x20 n=$((n + 1))\n\
             done\n\
             echo \"created $n\"\n"
        }
        other => panic!("no program for {other}"),
    };
    code.replace("MARKER", marker)
}

/// Writes 1 MiB of every byte value, reads it back, prints `ok 1048576`.
fn megabyte(runtime: &str) -> &'static str {
    match runtime {
        "python" => {
            "data = bytes(range(256)) * 4096\n\
             with open('/mb.bin', 'wb') as f:\n\
             \x20   f.write(data)\n\
             back = open('/mb.bin', 'rb').read()\n\
             print('ok' if back == data else 'mismatch', len(back))\n"
        }
        "quickjs" => {
            "const n = 1 << 20;\n\
             const buf = new Uint8Array(n);\n\
             for (let i = 0; i < n; i++) buf[i] = i & 255;\n\
             const f = std.open('/mb.bin', 'wb');\n\
             f.write(buf.buffer, 0, n);\n\
             f.close();\n\
             const g = std.open('/mb.bin', 'rb');\n\
             const back = new Uint8Array(n + 1);\n\
             const r = g.read(back.buffer, 0, n + 1);\n\
             g.close();\n\
             let same = r === n;\n\
             for (let i = 0; same && i < n; i++) same = back[i] === (i & 255);\n\
             console.log((same ? 'ok ' : 'mismatch ') + r);\n"
        }
        "ruby" => {
            "data = (0...256).map(&:chr).join.b * 4096\n\
             File.binwrite('/mb.bin', data)\n\
             back = File.binread('/mb.bin')\n\
             puts \"#{back == data ? 'ok' : 'mismatch'} #{back.bytesize}\"\n"
        }
        "php-cgi" => {
            "<?php\n\
             $data = str_repeat(implode('', array_map('chr', range(0, 255))), 4096);\n\
             file_put_contents('/mb.bin', $data);\n\
             $back = file_get_contents('/mb.bin');\n\
             echo $back === $data ? 'ok' : 'mismatch', ' ', strlen($back), \"\\n\";\n"
        }
        "clang" | "clangpp" => {
            "#include <stdio.h>\n\
             static unsigned char data[1 << 20], back[(1 << 20) + 1];\n\
             int main(void) {\n\
             \x20 for (int i = 0; i < (1 << 20); i++) data[i] = (unsigned char)i;\n\
             \x20 FILE *f = fopen(\"/mb.bin\", \"wb\");\n\
             \x20 fwrite(data, 1, sizeof data, f);\n\
             \x20 fclose(f);\n\
             \x20 f = fopen(\"/mb.bin\", \"rb\");\n\
             \x20 size_t r = fread(back, 1, sizeof back, f);\n\
             \x20 fclose(f);\n\
             \x20 int same = r == sizeof data;\n\
             \x20 for (size_t i = 0; same && i < sizeof data; i++) same = back[i] == data[i];\n\
             \x20 printf(\"%s %zu\\n\", same ? \"ok\" : \"mismatch\", r);\n\
             \x20 return 0;\n\
             }\n"
        }
        "javascript" | "typescript" => {
            "const fs = require('fs');\n\
             const n = 1 << 20;\n\
             const data = new Uint8Array(n);\n\
             for (let i = 0; i < n; i++) data[i] = i & 255;\n\
             fs.writeFileSync('/mb.bin', data);\n\
             const back = fs.readFileSync('/mb.bin');\n\
             let same = back.length === n;\n\
             for (let i = 0; same && i < n; i++) same = back[i] === (i & 255);\n\
             console.log((same ? 'ok ' : 'mismatch ') + back.length);\n"
        }
        // Bytes by octal escapes (`\\0` too), doubled to 1 MiB, checked by their sha256.
        "shell" => {
            "for i in $(seq 0 255); do printf \"\\\\$(printf %03o \"$i\")\"; done > /mb.bin\n\
             for i in $(seq 12); do cat /mb.bin /mb.bin > /mb2.bin; mv /mb2.bin /mb.bin; done\n\
             sum=$(sha256sum < /mb.bin | cut -c1-64)\n\
             [ \"$sum\" = fbbab289f7f94b25736c58be46a994c441fd02552cc6022352e3d86d2fab7c83 ] && echo \"ok $(wc -c < /mb.bin)\" || echo \"mismatch $(wc -c < /mb.bin)\"\n"
        }
        other => panic!("no program for {other}"),
    }
}

/// A file name no other run (of any test process) uses.
fn unique_marker(what: &str, runtime: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("marker-{what}-{runtime}-{}-{nanos}", std::process::id())
}

/// The scratch directory (`runbox-run-*` in the server's scratch root) holding `marker`,
/// if any.
fn find_scratch(marker: &str) -> Option<PathBuf> {
    std::fs::read_dir(runbox().scratch_root())
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("runbox-run-"))
        .map(|e| e.path())
        .find(|dir| dir.join(marker).exists())
}

/// Runs `code`, watching the host's temp dir meanwhile for the run's scratch directory
/// (found by the file `marker` the program creates first). Returns the outcome, the wall
/// time, and the scratch directory seen.
async fn run_watching(
    runtime: &str,
    code: String,
    marker: &str,
    timeout: Duration,
) -> (RunOutcome, Duration, Option<PathBuf>) {
    let started = Instant::now();
    let rt = runtime.to_string();
    let mut call = tokio::spawn(async move { run_with(&rt, &code, None, Some(timeout)).await });
    let mut scratch = None;
    let out = loop {
        tokio::select! {
            out = &mut call => break out.expect("the run task"),
            _ = tokio::time::sleep(Duration::from_millis(2)) => {
                if scratch.is_none() {
                    scratch = find_scratch(marker);
                }
            }
        }
    };
    (out, started.elapsed(), scratch)
}

/// ENOSPC as the program printed it (C's strerror, or Node.js's lower-case wording).
fn saw_no_space(out: &RunOutcome) -> bool {
    out.tty().to_lowercase().contains(&NO_SPACE.to_lowercase())
}

/// The number in `stopped after N <unit>` of the program's output.
fn stopped_after(out: &RunOutcome, unit: &str) -> Option<u64> {
    let stdout = out.stdout();
    let rest = stdout.split("stopped after ").nth(1)?;
    let (n, rest) = rest.split_once(' ')?;
    rest.starts_with(unit).then(|| n.parse().ok())?
}

fn assert_scratch_removed(runtime: &str, scratch: Option<PathBuf>) {
    let scratch = scratch.unwrap_or_else(|| panic!("{runtime}: never saw the run's scratch dir"));
    assert!(
        !Path::new(&scratch).exists(),
        "{runtime}: scratch dir {} is left after the run",
        scratch.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_a_gigabyte_stops_at_the_cap_with_enospc() {
    let cap_mb = runbox().limits().scratch_bytes >> 20;
    for runtime in runtimes() {
        let marker = unique_marker("fill", runtime);
        let code = fill_disk(runtime, &marker);
        let (out, elapsed, scratch) =
            run_watching(runtime, code, &marker, Duration::from_secs(30)).await;
        assert!(
            elapsed < Duration::from_secs(10),
            "{runtime}: filling the disk took {elapsed:?}: {out:?}"
        );
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert!(saw_no_space(&out), "{runtime}: no ENOSPC seen: {out:?}");
        let mb = stopped_after(&out, "MB")
            .unwrap_or_else(|| panic!("{runtime}: the write did not stop: {out:?}"));
        assert!(
            // At most the cap; `javascript` writes no program file, so it fits all of it.
            (cap_mb - 2..=cap_mb).contains(&mb),
            "{runtime}: stopped after {mb} MB, the cap is {cap_mb} MiB: {out:?}"
        );
        assert_scratch_removed(runtime, scratch);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creating_100_000_files_stops_at_the_cap() {
    let cap = runbox().limits().scratch_files;
    for runtime in runtimes() {
        let marker = unique_marker("files", runtime);
        let code = many_files(runtime, &marker);
        // Creating ten thousand files takes a few seconds on a busy machine; this test is
        // about where it stops, not how fast.
        let (out, _, scratch) = run_watching(runtime, code, &marker, Duration::from_secs(60)).await;
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert!(saw_no_space(&out), "{runtime}: no ENOSPC seen: {out:?}");
        let n = stopped_after(&out, "files")
            .unwrap_or_else(|| panic!("{runtime}: the creation did not stop: {out:?}"));
        // The program file, the marker and `/d` count too.
        assert!(
            (cap - 10..cap).contains(&n),
            "{runtime}: stopped after {n} files, the cap is {cap}: {out:?}"
        );
        assert_scratch_removed(runtime, scratch);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writing_and_reading_a_megabyte_works() {
    for runtime in runtimes() {
        let out = run(runtime, megabyte(runtime)).await;
        assert_eq!(out.status, RunStatus::Completed, "{runtime}: {out:?}");
        assert_eq!(out.stdout(), "ok 1048576\n", "{runtime}: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_comes_back_when_files_are_deleted_rewritten_or_replaced() {
    // 400 MiB written in each loop, 12,000 names created in each of the last two: every
    // one would fail if nothing came back.
    let code = "import os\n\
                mb = b'x' * (1 << 20)\n\
                for i in range(400):\n\
                \x20   with open(f'/tmp{i}', 'wb') as f:\n\
                \x20       f.write(mb)\n\
                \x20   os.unlink(f'/tmp{i}')\n\
                for i in range(400):\n\
                \x20   with open('/same', 'wb') as f:\n\
                \x20       f.write(mb)\n\
                for i in range(400):\n\
                \x20   with open('/new', 'wb') as f:\n\
                \x20       f.write(mb)\n\
                \x20   os.replace('/new', '/target')\n\
                with open('/shrinking', 'wb') as f:\n\
                \x20   for i in range(400):\n\
                \x20       f.seek(0)\n\
                \x20       f.truncate(0)\n\
                \x20       f.write(mb)\n\
                for i in range(12000):\n\
                \x20   os.mkdir('/dir')\n\
                \x20   os.rmdir('/dir')\n\
                for i in range(12000):\n\
                \x20   open('/empty', 'w').close()\n\
                \x20   os.unlink('/empty')\n\
                print('ok')\n";
    let out = run_with("python", code, None, Some(Duration::from_secs(60))).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.stdout(), "ok\n", "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_file_keeps_its_space_while_it_is_open() {
    let code = "import os\n\
                big = b'x' * (1 << 20)\n\
                f = open('/held', 'wb')\n\
                for i in range(200):\n\
                \x20   f.write(big)\n\
                f.flush()\n\
                os.unlink('/held')\n\
                def fill(name, mb):\n\
                \x20   try:\n\
                \x20       with open(name, 'wb') as g:\n\
                \x20           for i in range(mb):\n\
                \x20               g.write(big)\n\
                \x20       return 'fits'\n\
                \x20   except OSError as e:\n\
                \x20       return e.strerror\n\
                print('while open:', fill('/other', 100))\n\
                os.unlink('/other')\n\
                f.close()\n\
                print('after close:', fill('/other2', 100))\n";
    let out = run_with("python", code, None, Some(Duration::from_secs(30))).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.stdout(),
        format!("while open: {NO_SPACE}\nafter close: fits\n"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparse_writes_and_growing_truncates_pay_for_their_size() {
    let code = "import os\n\
                fd = os.open('/sparse', os.O_RDWR | os.O_CREAT)\n\
                for what, op in (('pwrite past 1 GiB:', lambda: os.pwrite(fd, b'x', 1 << 30)),\n\
                \x20                ('ftruncate to 1 GiB:', lambda: os.ftruncate(fd, 1 << 30))):\n\
                \x20   try:\n\
                \x20       op()\n\
                \x20       print(what, 'worked')\n\
                \x20   except OSError as e:\n\
                \x20       print(what, e.strerror)\n\
                os.ftruncate(fd, 100 << 20)\n\
                os.pwrite(fd, b'y', 200 << 20)\n\
                print('size', os.fstat(fd).st_size)\n";
    let out = run("python", code).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.stdout(),
        format!(
            "pwrite past 1 GiB: {NO_SPACE}\nftruncate to 1 GiB: {NO_SPACE}\nsize {}\n",
            (200 << 20) + 1
        ),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_disk_filled_up_stays_a_crash_and_mentions_the_disk() {
    // The program sees ENOSPC, then crashes on its own (`__builtin_trap`): the full disk
    // did not cause the trap, so the run crashed, and the error says both.
    let code = "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n\
                static char block[1 << 20];\n\
                int main(void) {\n\
                    FILE *f = fopen(\"big.bin\", \"wb\");\n\
                    while (fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0) {}\n\
                    printf(\"full: %s\\n\", strerror(errno));\n\
                    fflush(stdout);\n\
                    __builtin_trap();\n\
                }\n";
    let out = run_with("clang", code, None, Some(Duration::from_secs(60))).await;
    assert_eq!(out.status, RunStatus::Crashed, "{out:?}");
    assert_eq!(out.stdout(), format!("full: {NO_SPACE}\n"), "{out:?}");
    let error = out.error.as_deref().unwrap_or_default();
    assert!(error.contains("unreachable"), "{out:?}");
    assert!(error.contains("earlier in the run: disk limit"), "{out:?}");
}

/// The scratch cap of [`small_scratch`]: 1 MiB.
const SMALL_SCRATCH: u64 = 1 << 20;

/// A Runbox of its own with only `python` and a [`SMALL_SCRATCH`] cap, loaded once.
async fn small_scratch() -> std::sync::Arc<Runbox> {
    static RUNBOX: tokio::sync::OnceCell<std::sync::Arc<Runbox>> =
        tokio::sync::OnceCell::const_new();
    RUNBOX
        .get_or_init(|| async {
            std::sync::Arc::new(
                common::own_runbox(RunboxOptions {
                    limits: LimitSettings {
                        scratch_bytes: SMALL_SCRATCH,
                        ..LimitSettings::default()
                    },
                    only: vec!["python".into()],
                    ..common::options()
                })
                .await,
            )
        })
        .await
        .clone()
}

/// Runs python `code` under the [`SMALL_SCRATCH`] cap.
async fn run_small_scratch(code: &str) -> RunOutcome {
    let runbox = small_scratch().await;
    common::run_on(&runbox, "python", code, Duration::from_secs(30))
        .await
        .expect("run")
}

/// Python that defines `fill(make, what)`: calls `make(i)` for i = 0, 1, … until it
/// fails, and prints `<what> N: <error>` (N made; `no limit` if all 2,000 worked).
const FILL: &str = "import os\n\
                    def fill(make, what):\n\
                    \x20   n = 0\n\
                    \x20   try:\n\
                    \x20       for i in range(2000):\n\
                    \x20           make(i)\n\
                    \x20           n += 1\n\
                    \x20       print(f'{what} {n}: no limit')\n\
                    \x20   except OSError as e:\n\
                    \x20       print(f'{what} {n}: {e.strerror}')\n\
                    \x20   return n\n";

/// What `fill` printed for `what`: how many it made and why it stopped, e.g.
/// `(262, "No space left on device")`. (In WASI, ENOSPC is errno 51, not Linux's 28.)
fn filled(out: &RunOutcome, what: &str) -> Vec<(u64, String)> {
    out.stdout()
        .lines()
        .filter_map(|l| l.strip_prefix(what)?.strip_prefix(' '))
        .map(|rest| {
            let (n, why) = rest.split_once(": ").unwrap();
            (n.parse().unwrap(), why.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_targets_and_directories_are_charged_to_the_scratch_cap() {
    // 4,000-byte targets and directories until ENOSPC, twice each: the second round
    // only fits if removing the first gave its bytes back.
    let code = format!(
        "{FILL}\
         target = 't' * 4000\n\
         for round in range(2):\n\
         \x20   n = fill(lambda i: os.symlink(target, f'/l{{i}}'), 'links')\n\
         \x20   print('half-made link', os.path.lexists(f'/l{{n}}'))\n\
         \x20   for i in range(n):\n\
         \x20       os.unlink(f'/l{{i}}')\n\
         for round in range(2):\n\
         \x20   n = fill(lambda i: os.mkdir(f'/d{{i}}'), 'dirs')\n\
         \x20   print('half-made dir', os.path.lexists(f'/d{{n}}'))\n\
         \x20   for i in range(n):\n\
         \x20       os.rmdir(f'/d{{i}}')\n\
         # Fill what is left exactly (the largest size `ftruncate` allows): then not even\n\
         # a one-byte link fits; with 200 bytes freed, twenty 10-byte links do.\n\
         fd = os.open('/full', os.O_RDWR | os.O_CREAT)\n\
         lo, hi = 0, {SMALL_SCRATCH}\n\
         while lo < hi:\n\
         \x20   mid = (lo + hi + 1) // 2\n\
         \x20   try:\n\
         \x20       os.ftruncate(fd, mid)\n\
         \x20       lo = mid\n\
         \x20   except OSError:\n\
         \x20       hi = mid - 1\n\
         os.ftruncate(fd, lo)\n\
         fill(lambda i: os.symlink('t', f'/one{{i}}'), 'one-byte links')\n\
         fill(lambda i: os.mkdir(f'/full-dir{{i}}'), 'full dirs')\n\
         os.ftruncate(fd, lo - 200)\n\
         fill(lambda i: os.symlink('t' * 10, f'/s{{i}}'), 'short links')\n"
    );
    let out = run_small_scratch(&code).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    // The cap less what else the run holds: the program file and `.runbox/`, if the
    // plugin makes it (a few kB).
    let most_links = SMALL_SCRATCH / 4000;
    let most_dirs = SMALL_SCRATCH / 4096;
    let links = filled(&out, "links");
    let dirs = filled(&out, "dirs");
    assert_eq!(links.len(), 2, "{out:?}");
    assert_eq!(dirs.len(), 2, "{out:?}");
    for (n, why) in links {
        assert_eq!(why, NO_SPACE, "links: {out:?}");
        assert!(
            (most_links - 4..=most_links).contains(&n),
            "{n} links: {out:?}"
        );
    }
    for (n, why) in dirs {
        assert_eq!(why, NO_SPACE, "dirs: {out:?}");
        assert!(
            (most_dirs - 4..=most_dirs).contains(&n),
            "{n} dirs: {out:?}"
        );
    }
    // Nothing is created past the cap.
    let stdout = out.stdout();
    assert_eq!(stdout.matches("half-made link False").count(), 2, "{out:?}");
    assert_eq!(stdout.matches("half-made dir False").count(), 2, "{out:?}");
    // Each link is charged its target's length, each directory 4 kB.
    let full = [(0, NO_SPACE.to_string())];
    assert_eq!(filled(&out, "one-byte links"), full, "{out:?}");
    assert_eq!(filled(&out, "full dirs"), full, "{out:?}");
    assert_eq!(
        filled(&out, "short links"),
        [(20, NO_SPACE.to_string())],
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_or_renaming_over_symlinks_and_directories_gives_their_bytes_back() {
    // Each loop charges 600 * 4,000 bytes or more, over twice the cap: every one fails
    // unless removals give the bytes back.
    let code = format!(
        "{FILL}\
         target = 't' * 4000\n\
         def loop(what, *steps):\n\
         \x20   try:\n\
         \x20       for i in range(600):\n\
         \x20           for step in steps:\n\
         \x20               step()\n\
         \x20       print(what, 'ok')\n\
         \x20   except OSError as e:\n\
         \x20       print(what, 'failed at', i, e)\n\
         loop('link-unlink', lambda: os.symlink(target, '/l'), lambda: os.unlink('/l'))\n\
         loop('mkdir-rmdir', lambda: os.mkdir('/d'), lambda: os.rmdir('/d'))\n\
         loop('link-over', lambda: os.symlink(target, '/new'), lambda: os.replace('/new', '/link'))\n\
         loop('dir-over', lambda: os.mkdir('/newdir'), lambda: os.replace('/newdir', '/dir'))\n\
         os.unlink('/link')\n\
         os.rmdir('/dir')\n\
         # Everything came back, and no more than that: a full round still stops at the cap.\n\
         fill(lambda i: os.symlink(target, f'/l{{i}}'), 'links')\n"
    );
    let out = run_small_scratch(&code).await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        out.stdout()
            .starts_with("link-unlink ok\nmkdir-rmdir ok\nlink-over ok\ndir-over ok\n"),
        "{out:?}"
    );
    let most_links = SMALL_SCRATCH / 4000;
    let links = filled(&out, "links");
    assert_eq!(links.len(), 1, "{out:?}");
    let (n, why) = &links[0];
    assert_eq!(why, NO_SPACE, "{out:?}");
    assert!(
        (most_links - 4..=most_links).contains(n),
        "{n} links: {out:?}"
    );
}

/// A tmpfs of `mib` MiB mounted on a new directory, unmounted when dropped (the tests run
/// as root here, as in CI; a machine where they cannot mount fails this test, saying so).
struct SmallVolume {
    dir: tempfile::TempDir,
}

impl SmallVolume {
    fn mount(mib: u64) -> SmallVolume {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "this test mounts a {mib} MiB tmpfs as the scratch volume (it needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallVolume { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallVolume {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// An operator's small scratch volume (a 64 MiB tmpfs, far below each run's 256 MiB
/// cap): a session filling it is stopped short of the room kept for new runs, which
/// still start, python and C alike; and when something else fills the volume, a new
/// run is refused in plain words that name the full disk, not crashed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_scratch_volume_is_said_and_one_session_cannot_starve_the_others() {
    let volume = SmallVolume::mount(64);
    let rb = common::own_runbox(RunboxOptions {
        scratch_dir: Some(volume.path().to_path_buf()),
        only: vec!["python".into(), "clang".into()],
        ..common::options()
    })
    .await;
    let session = rb.create_session("python").await.expect("a session");
    let fill = "n = 0\n\
                try:\n\
                \x20   with open('fill.bin', 'wb') as f:\n\
                \x20       for _ in range(64):\n\
                \x20           f.write(b'x' * (1 << 20))\n\
                \x20           f.flush()\n\
                \x20           n += 1\n\
                except OSError as e:\n\
                \x20   print('stopped after', n, 'MiB:', e.strerror)\n";
    let out = rb
        .run(
            RunRequest {
                code: fill.into(),
                session_id: Some(session.session_id.clone()),
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("the session's call");
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let said = out.stdout().into_owned();
    let n: u64 = said
        .strip_prefix("stopped after ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the session was not stopped: {said:?}"));
    assert!(said.ends_with(&format!("{NO_SPACE}\n")), "{said:?}");
    assert!((32..=48).contains(&n), "stopped after {n} MiB: {said:?}");
    // The session holds its file; new runs still start and write.
    for (runtime, code, stdout) in [
        (
            "python",
            "open('a.txt', 'w').write('a' * 100000)\nprint('python ok')",
            "python ok\n",
        ),
        (
            "clang",
            "#include <stdio.h>\nint main(void) { puts(\"c ok\"); return 0; }\n",
            "c ok\n",
        ),
    ] {
        let out = common::run_on(&rb, runtime, code, Duration::from_secs(60))
            .await
            .expect(runtime);
        assert_eq!(
            (out.status, out.stdout().into_owned()),
            (RunStatus::Completed, stdout.to_string()),
            "{runtime}: {out:?}"
        );
    }
    // Something else takes the rest of the volume: a new run is refused, saying why.
    let hog = volume.path().join("hog.bin");
    let mut file = std::fs::File::create(&hog).unwrap();
    let chunk = vec![0u8; 1 << 20];
    while std::io::Write::write_all(&mut file, &chunk).is_ok() {}
    drop(file);
    let refused = common::run_on(&rb, "python", "print(1)", Duration::from_secs(30))
        .await
        .expect_err("no room to start");
    let message = refused.to_string();
    assert!(
        message.contains("scratch disk is full") && message.contains("close_session"),
        "{message}"
    );
    std::fs::remove_file(&hog).unwrap();
    let out = common::run_on(&rb, "python", "print(1)", Duration::from_secs(30))
        .await
        .expect("room again");
    assert_eq!(out.stdout(), "1\n");
    rb.close_session(&session.session_id).unwrap();
}
