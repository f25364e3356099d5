//! The shell's text tools against GNU's: each row is a command line a model might write,
//! run by runbox's shell (bashkit's built-ins) and by the host's `/bin/bash` with GNU
//! coreutils, grep, sed, gawk and findutils, in two directories holding the same files.
//! Their stdout and exit status must agree, except for the rows in [`KNOWN_DIFFERENCES`],
//! which must still differ (so the list cannot go stale unnoticed).
//!
//! `bc` has its own table of programs with the answers written here, checked against both
//! runbox's bc and the host's GNU bc.
//!
//! A GNU tool missing on the host is installed with apt-get; if that fails the tests fail
//! and say what is missing.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::commands::NoCommands;
use crate::shell::{Output, Script, Shell};

/// The files every row runs on, in the working directory.
const FILES: &[(&str, &str)] = &[
    (
        "data.csv",
        "name,dept,salary\nada,eng,120\nbob,ops,80\ncy,eng,95\ndee,ops,80\neve,sales,70\n",
    ),
    (
        "words.txt",
        "the quick brown fox\njumps over  the lazy dog\nThe end\n\nthe  the   end\n",
    ),
    ("nums.txt", "10\n2\n33\n2\n-5\n1.5\n0\n"),
    (
        "passwd",
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nuser:x:1000:1000:User,,,:/home/user:/bin/bash\n",
    ),
    (
        "log.txt",
        "INFO start\nERROR disk full\nWARN low memory\nerror: retry 3\nINFO done\n",
    ),
    (
        "list.txt",
        "apple\nbanana\napple\ncherry\nbanana\napple\n",
    ),
    ("table.tsv", "id\tname\tscore\n1\tann\t9.5\n2\tben\t7\n3\tcat\t8.25\n"),
    (
        "emails.txt",
        "contact: ann@example.com, ben@test.org\nnone here\nx cat@mail.net y\n",
    ),
    ("dir/a.csv", "x,1\nerror,2\n"),
    ("dir/sub/b.csv", "y,3\n"),
    ("dir/notes.md", "# notes\nan error here\nfine\n"),
];

/// Command lines that must print what GNU's tools print, with the same exit status.
const ROWS: &[&str] = &[
    // sort
    "sort list.txt",
    "sort -r list.txt",
    "sort -u list.txt",
    "sort -n nums.txt",
    "sort -rn nums.txt",
    "sort -n -r nums.txt",
    "sort -nu nums.txt",
    "sort -t, -k2 data.csv",
    "sort -t, -k3 -n data.csv",
    "sort -t, -k2 -n -r data.csv",
    "sort -t, -k3 -n -r data.csv",
    "sort -t, -k3,3n -k1,1r data.csv",
    "sort -t, -k2,2 -u data.csv",
    "tail -n +2 data.csv | sort -t, -k3 -nr | head -3",
    "sort -k2 words.txt",
    "sort -t$'\\t' -k3 -n table.tsv",
    "sort list.txt nums.txt",
    "sort -f words.txt",
    // uniq
    "uniq list.txt",
    "sort list.txt | uniq",
    "sort list.txt | uniq -c",
    "sort list.txt | uniq -d",
    "sort list.txt | uniq -u",
    "sort list.txt | uniq -c | sort -rn",
    "sort list.txt | uniq -c | sort -nr | head -1",
    "cut -d, -f2 data.csv | tail -n +2 | sort | uniq -c | sort -rn",
    // cut
    "cut -d: -f1 passwd",
    "cut -d: -f1,3 passwd",
    "cut -d: -f1-3 passwd",
    "cut -d: -f6- passwd",
    "cut -d, -f2 data.csv",
    "cut -d, -f2- data.csv",
    "cut -d, -f5 data.csv",
    "cut -c1-3 list.txt",
    "cut -c2- list.txt",
    "cut -d' ' -f2 words.txt",
    "cut -f2 table.tsv",
    "cut -f1,3 table.tsv",
    // tr
    "tr a-z A-Z < list.txt",
    "tr -d aeiou < list.txt",
    "tr -s ' ' < words.txt",
    "tr -s '\\n' < words.txt",
    "tr -d '\\n' < list.txt",
    "echo hello | tr -d l",
    "tr ',' '\\t' < data.csv",
    "tr -cd 'a-z\\n' < words.txt",
    "tr '[:lower:]' '[:upper:]' < list.txt",
    "tr -s ' ' '\\n' < words.txt",
    "echo 'a  b   c' | tr -s ' ' | cut -d' ' -f2",
    // sed
    "sed 's/a/A/' list.txt",
    "sed 's/a/A/g' list.txt",
    "sed -E 's/([a-z]+)/<\\1>/g' words.txt",
    "sed -E 's/^([^,]+),([^,]+)/\\2,\\1/' data.csv",
    "sed -n '2,3p' list.txt",
    "sed '/apple/d' list.txt",
    "sed -n '/ERROR/p' log.txt",
    "sed 's/[0-9]\\+/N/g' data.csv",
    "sed -E 's/[0-9]+/N/g' data.csv",
    "sed -e 's/a/b/' -e 's/b/c/' list.txt",
    "sed '1d' data.csv",
    "sed '$d' list.txt",
    "sed -E 's/[[:space:]]+/ /g' words.txt",
    "sed 's#/#|#g' passwd",
    "sed -i 's/apple/APPLE/' list.txt && cat list.txt",
    "sed -E 's/(\\w+)@(\\w+)/\\2 at \\1/g' emails.txt",
    "sed 's/^/> /' list.txt",
    "sed -n '$=' list.txt",
    "sed 'y/abc/xyz/' list.txt",
    "sed -E 's/a|e/_/2' list.txt",
    // awk
    "awk -F, '{print $2}' data.csv",
    "awk -F, 'NR>1 {s+=$3} END {print s}' data.csv",
    "awk -F: '{print $1, $NF}' passwd",
    "awk '{print NF}' words.txt",
    "awk -F, '$3 > 80 {print $1}' data.csv",
    "awk -F, -v OFS='\\t' '{print $1, $3}' data.csv",
    "awk '{count[$1]++} END {for (k in count) print k, count[k]}' list.txt | sort",
    "awk 'length($0) > 5' list.txt",
    "awk -F, 'NR==2' data.csv",
    "awk '{printf \"%-10s|%5.1f\\n\", $1, NR*1.5}' list.txt",
    "awk -F, 'NR>1 {sum[$2]+=$3} END {for (d in sum) print d, sum[d]}' data.csv | sort",
    "awk 'BEGIN {print 1/3, 2^10, 10%3}'",
    "awk '{print toupper($0)}' list.txt",
    "awk -F, '{print NR\": \"$1}' data.csv",
    "awk -F'\\t' '{print $2}' table.tsv",
    "awk -F, 'NR>1 && $3 >= 80 {n++} END {print n}' data.csv",
    "awk '{$1=\"\"; print}' words.txt",
    "awk -F, '{gsub(/a/, \"A\", $1); print $1}' data.csv",
    "awk 'NR%2==0' list.txt",
    "awk -F, 'BEGIN {OFS=\"-\"} {$1=$1; print}' data.csv",
    "awk '{s+=$1} END {printf \"%.2f\\n\", s/NR}' nums.txt",
    "awk -F: '$3 >= 1000 {print $1}' passwd",
    "awk '/ERROR/,/WARN/' log.txt",
    "awk '{print substr($0, 2, 3)}' list.txt",
    "awk -F, '{print length($1)}' data.csv",
    // grep
    "grep error log.txt",
    "grep -i error log.txt",
    "grep -v INFO log.txt",
    "grep -n ERROR log.txt",
    "grep -c apple list.txt",
    "grep -E 'ERROR|WARN' log.txt",
    "grep -o -E '[0-9]+' data.csv",
    "grep -oE '[a-z]+@[a-z]+\\.[a-z]+' emails.txt",
    "grep -r error dir | sort",
    "grep -rn error dir | sort",
    "grep -rl error . | sort",
    "grep -ri ERROR dir | sort",
    "grep -w the words.txt",
    "grep -x apple list.txt",
    "grep -in 'the' words.txt",
    "grep -vc apple list.txt",
    "grep -q apple list.txt; echo $?",
    "grep nomatch list.txt; echo $?",
    "grep -e apple -e cherry list.txt",
    "grep -F '.' nums.txt",
    "grep -A1 ERROR log.txt",
    "grep -B1 WARN log.txt",
    "grep -C1 WARN log.txt",
    "grep -E -o -i 'error|info' log.txt",
    "grep -vn '^$' words.txt",
    "grep -c '' words.txt",
    "grep -l apple list.txt data.csv",
    "grep apple list.txt data.csv",
    "grep -h a list.txt data.csv",
    "grep -E '^[a-c]' list.txt",
    "grep -oi 'the' words.txt | wc -l",
    "grep -E '[0-9]{3}' data.csv",
    "grep -P '\\d+' nums.txt",
    // head
    "head -n 2 list.txt",
    "head -2 list.txt",
    "head -n 1 data.csv",
    "head list.txt",
    "head -n -2 list.txt",
    "head -c 10 list.txt",
    "head -c 5 data.csv; echo",
    "head -n 1 data.csv list.txt",
    "cat list.txt | head -n 3",
    "tail -n 2 list.txt",
    "tail -n +3 list.txt",
    "tail -c 6 list.txt",
    // wc
    "wc -l list.txt",
    "wc -l < list.txt",
    "wc -w words.txt",
    "wc -c list.txt",
    "wc list.txt",
    "wc -l list.txt data.csv",
    "cat list.txt | wc -l",
    "wc -w < words.txt",
    "wc -c < data.csv",
    "echo -n abc | wc -c",
    "wc -lw words.txt",
    // find
    "find . -name '*.csv' | sort",
    "find . -name '*.csv' -type f | sort",
    "find dir -type d | sort",
    "find dir -type f -name '*.md'",
    "find . -maxdepth 1 -type f | sort",
    "find dir -name 'b*'",
    "find dir -iname '*.CSV' | sort",
    "find . -type f -name '*.txt' | wc -l",
    "find dir -type f | sort | xargs wc -l",
    "find . -path './dir/*' -name '*.csv' | sort",
    "find dir -name '*.csv' -o -name '*.md' | sort",
    "find . -empty",
    // xargs
    "printf 'a\\nb\\nc\\n' | xargs -n1 echo",
    "echo a b c d | xargs -n2",
    "echo a b c d | xargs -n 3 echo x",
    "cat list.txt | xargs -I{} echo item:{}",
    "cat list.txt | xargs -I {} echo '<{}>'",
    "find dir -name '*.csv' | sort | xargs cat",
    "echo a b c | xargs",
    "echo a b c | xargs echo",
    "printf '1\\n2\\n3\\n' | xargs -n1 -I{} echo {}-{}",
    "find dir -type f -name '*.csv' | sort | xargs grep -n error",
    "printf 'x y\\n' | xargs -n1",
    // printf
    "printf '%s\\n' a b c",
    "printf '%d\\n' 42 -7",
    "printf '%5.2f\\n' 3.14159",
    "printf '%-5s|\\n' ab",
    "printf '%5s|\\n' ab",
    "printf '%05d\\n' 42",
    "printf '%x %o %X\\n' 255 8 255",
    "printf '%s=%d\\n' a 1 b 2",
    "printf '%e\\n' 1234.5",
    "printf '%.3s\\n' abcdef",
    "printf '%c\\n' hello",
    "printf '%%\\n'",
    "printf 'a\\tb\\n'",
    "printf '%b\\n' 'x\\ty'",
    "printf '%5.1f%%\\n' 45.678",
    "printf '%-10s %5d\\n' apple 3 banana 12",
    "printf '%s\\n'",
    "printf '%d\\n' abc; echo $?",
    "printf '%i|%+d|% d\\n' 7 7 7",
    "printf '%08.3f\\n' -3.14159",
    "printf '%s %s\\n' only",
    // more of each, as models write them
    "sort -k2,2nr -t, data.csv",
    "sort -t: -k3n passwd",
    "sort -t: -k3 -n -r passwd | cut -d: -f1",
    "sort -k1.2 list.txt",
    "sort -o out.txt list.txt; cat out.txt",
    "sort -c list.txt; echo $?",
    "sort list.txt | sort -c; echo $?",
    "sort -s -t, -k2,2 data.csv",
    "sort -b words.txt",
    "printf '1K\\n3M\\n2G\\n512\\n' | sort -h",
    "printf 'v1.10\\nv1.2\\nv1.9\\n' | sort -V",
    "printf '1e3\\n5\\n-2.5e1\\n' | sort -g",
    "sort -t, -k3 -rn data.csv | head -n 1 | cut -d, -f1",
    "uniq -i words.txt",
    "printf 'a 1\\nb 1\\nc 2\\n' | uniq -f1",
    "printf 'xa\\nya\\nzb\\n' | uniq -s1",
    "printf 'abc1\\nabc2\\nabd\\n' | uniq -w3",
    "sort list.txt | uniq -cd",
    "cut -b1-2 list.txt",
    "cut -d, -f1 --complement data.csv",
    "printf 'a:b\\nnone\\nc:d\\n' | cut -s -d: -f2",
    "printf 'a:b\\nnone\\nc:d\\n' | cut -d: -f2",
    "cut --output-delimiter=' ' -d, -f1,3 data.csv",
    "cut -c-3 list.txt",
    "cut -d, -f3,1 data.csv",
    "tr -c 'a-z\\n' '_' < words.txt",
    "tr '[:upper:]' '[:lower:]' < log.txt",
    "tr -d '[:digit:]' < data.csv",
    "tr -d '[:space:]' < list.txt",
    "tr -s 'a-z' < list.txt",
    "echo abcabc | tr abc x",
    "tr '\\n' ',' < list.txt",
    "echo hello | tr 'a-y' 'b-z'",
    "echo 'aabbcc' | tr -ds a b",
    "sed -n 's/apple/X/p' list.txt",
    "sed '2i\\inserted' list.txt",
    "sed '2a appended' list.txt",
    "sed '/^$/d' words.txt",
    "sed 's/.*/\\U&/' list.txt",
    "sed 's/\\(.*\\)/[\\1]/' list.txt",
    "sed = list.txt",
    "sed '1~2d' list.txt",
    "sed '2q' list.txt",
    "sed -n '/ERROR/,/error/p' log.txt",
    "sed 's/a/X/2' list.txt",
    "sed -E 's/(.)(.)/\\2\\1/' list.txt",
    "sed 's/[aeiou]//g' list.txt",
    "sed '1i header' list.txt",
    "sed '$a footer' list.txt",
    "sed 'N;s/\\n/ /' list.txt",
    "sed ':a;N;$!ba;s/\\n/,/g' list.txt",
    "sed 's/,/\\n/g' data.csv",
    "sed 's/\\t/ /g' table.tsv",
    "sed '2c\\changed' list.txt",
    "sed -E 's/^(.{3}).*/\\1/' list.txt",
    "sed 's/apple/&s/' list.txt",
    "sed -n '2{p;q}' list.txt",
    "sed '/apple/!d' list.txt",
    "sed '/banana/s/a/A/g' list.txt",
    "sed 's/APPLE/x/I' list.txt",
    "sed -n '/^the/Ip' words.txt",
    "awk -v x=5 'BEGIN {print x * 2}'",
    "awk 'BEGIN {split(\"a,b,c\", arr, \",\"); print arr[2], length(arr)}'",
    "awk '{print $NF}' words.txt",
    "awk 'END {print NR}' list.txt",
    "awk '{a[NR]=$0} END {for (i = NR; i > 0; i--) print a[i]}' list.txt",
    "awk 'BEGIN {x = \"10\"; y = 9; print (x > y)}'",
    "awk '{sub(/a/, \"b\"); print}' list.txt",
    "awk 'match($0, /[0-9]+/) {print substr($0, RSTART, RLENGTH)}' log.txt",
    "awk -F, 'NR>1 {printf \"%s,%s\\n\", $1, $3 * 1.1}' data.csv",
    "awk 'BEGIN {print int(-3.7), int(3.7)}'",
    "awk 'BEGIN {printf \"%5.2f|%-8s|%03d\\n\", 3.14159, \"ab\", 7}'",
    "awk 'BEGIN {print substr(\"hello\", 0, 2), index(\"hello\", \"l\")}'",
    "awk '{print > (\"out_\" $1 \".txt\")} END {close(\"out_apple.txt\")}' list.txt; cat out_apple.txt",
    "awk 'NR==FNR {a[$1]; next} $1 in a' list.txt list.txt | head -2",
    "awk 'BEGIN {OFS=\",\"} {$1=$1} 1' words.txt",
    "awk '{print $1}' OFS=, words.txt",
    "awk '{print $1/3}' nums.txt",
    "awk 'BEGIN {print 2^53 + 1, 1e6, 1e16, 0.1 + 0.2, 100000 * 100000}'",
    "awk 'BEGIN {printf \"%d %i %x %o %e %g\\n\", 3.9, -2.5, 255, 8, 12345.678, 0.0001}'",
    "awk -F, '{print $1 \"|\" $2}' data.csv",
    "awk 'BEGIN {while (i < 3) {i++; printf \"%d \", i}; print \"\"}'",
    "awk '{n += length($0)} END {print n}' list.txt",
    "awk -F: -v OFS=: '{$2 = \"*\"; print}' passwd",
    "awk '/apple/ {c++} END {print c + 0}' list.txt",
    "awk 'BEGIN {getline line < \"list.txt\"; print line}'",
    "awk '{print tolower($1), length}' log.txt",
    "awk -F, 'NR > 1 {print $3 | \"sort -n\"}' data.csv",
    "awk 'BEGIN {printf \"%s\\n\", sprintf(\"%05.1f\", 3.14159)}'",
    "awk '{$3 = \"X\"} 1' words.txt",
    "awk 'BEGIN {n = split(\"2024-01-15\", d, \"-\"); print n, d[1] + 0, d[3] * 2}'",
    "grep -E '^$' -c words.txt",
    "grep -niw 'the' words.txt",
    "grep -r --include='*.csv' error . | sort",
    "grep -r --exclude-dir=sub y dir | sort",
    "grep -o '[^,]*$' data.csv",
    "grep -m1 apple list.txt",
    "grep -L apple list.txt data.csv",
    "grep apple nofile.txt; echo $?",
    "grep -s apple nofile.txt; echo $?",
    "grep -E 'p{2,}' list.txt",
    "grep '\\<the\\>' words.txt",
    "grep -oP '(?<=@)\\w+' emails.txt",
    "grep -E '(ap|ba)' list.txt",
    "grep -ic the words.txt",
    "grep -n . words.txt",
    "grep -e '-5' nums.txt",
    "grep -- -5 nums.txt",
    "grep -ow '[0-9]*' log.txt",
    "grep -E 'a.*n' -o list.txt",
    "head -n 0 list.txt",
    "head -c -5 list.txt",
    "tail -n 1 data.csv list.txt",
    "tail -1 list.txt",
    "head -n 3 list.txt | tail -n 1",
    "wc -m list.txt",
    "wc -L words.txt",
    "wc data.csv list.txt nums.txt",
    "wc -c < /dev/null",
    "printf 'no newline' | wc -l",
    "find . -name '*.txt' -exec wc -l {} \\; | sort",
    "find . -name '*.txt' -exec grep -l apple {} +",
    "find dir -mindepth 1 | sort",
    "find . -not -name '*.csv' -type f | sort",
    "find . ! -name '*.txt' -type f | sort",
    "find dir -type f -print0 | sort -z | xargs -0 cat",
    "find dir -type f -printf '%f\\n' | sort",
    "find dir -name '*.csv' -size -1k | sort",
    "find . -type d -name sub",
    "find dir/sub",
    "printf 'a\\0b\\0' | xargs -0 echo",
    "printf 'a b\\nc d\\n' | xargs -d '\\n' -n1 echo",
    "printf 'a b\\nc d\\n' | xargs -L1 echo",
    "echo -n | xargs echo hi",
    "echo -n | xargs -r echo hi",
    "echo 3 | xargs -I% seq %",
    "printf '%s\\n' \"$(echo a b)\"",
    "printf '%3d|%-3d|\\n' 5 5",
    "printf '%.0f %.0f %.0f\\n' 2.5 3.5 0.5",
    "printf '%g %g %g\\n' 0.0001 1e10 123456789",
    "printf '%s\\n' 'a\\nb'",
    "printf '%x\\n' -1",
    "printf '%d %d\\n' 0x1F 010",
    "printf '%d\\n' \"'A\"",
    "printf -v v '%05.1f' 3.14159; echo \"$v\"",
    "printf '%s,' a b c; echo",
    "printf '[%6.2f]\\n' 3.14159 -2.5",
    "printf '%-8s|%8s|\\n' left right",
    "printf '%u\\n' 42",
    "printf '%10.4f|\\n' 3.14159265",
    "printf '%s\\n' {1..3}",
    // a few more tools models pipe into these
    "cat -n list.txt",
    "paste -sd, list.txt",
    "seq 1 5 | paste -sd+ | bc",
    "echo '3.5 * 2' | bc",
    "echo 'scale=2; 10/3' | bc",
    "awk -F, 'NR>1 {print $3}' data.csv | paste -sd+ | bc",
    "seq 3",
    "seq 2 2 10",
    "rev < list.txt",
    "sort list.txt | uniq -c | awk '{print $2 \": \" $1}'",
    "cut -d, -f2 data.csv | sort -u | wc -l",
    "tr -s ' ' < words.txt | cut -d' ' -f1-2",
    "sort -t, -k2,2 -k3,3nr data.csv",
    "printf '3\\n\\n1\\n' | sort -n",
    "printf 'b\\nB\\na\\nA\\n' | sort",
    "printf 'b\\nB\\na\\nA\\n' | sort -f",
    "printf 'x\\n%.0s' {1..12} | uniq -c",
    "grep -c apple list.txt data.csv",
    "grep -E '\\bthe\\b' -o words.txt | wc -l",
    "sed -E 's/\\s+$//' words.txt",
    "sed 's/[[:upper:]]/\\L&/g' log.txt",
    "awk 'BEGIN {printf \"%.2f %.2f %.1f\\n\", 2.675, 1.005, 0.25}'",
    "awk 'BEGIN {print 0.1 * 3, 123456789012, 1/7}'",
    "awk 'BEGIN {x[\"a\"] = 1; delete x[\"a\"]; print length(x)}'",
    "awk -F '[,:]' '{print $2}' passwd",
    "awk 'BEGIN {printf \"%c%c\\n\", 65, \"hi\"}'",
    "echo c a b | xargs -n1 | sort",
    "find . -name '*.csv' | sort | xargs -I{} basename {}",
    "head -n5 list.txt | tail -n +2",
    "printf '%s\\n' *.txt",
    "printf '%*d|\\n' 5 42",
    "printf '%-*s|\\n' 6 ab",
    "printf '%.3e %G\\n' 0.000123456 1e-10",
    "printf '%5.1f|\\n' -0.04",
    "printf '%d\\n' 3.5; echo $?",
    "echo 'scale=3; 22/7' | bc",
    "echo 'scale=4; 2/3' | bc",
    "echo '4*a(1)' | bc -l",
    "echo 'scale=10; e(1); sqrt(2)' | bc -l",
    "echo '2^64' | bc",
    "echo 'sqrt(2)' | bc -l",
    "bc <<< '5/2'",
    "bc -l <<< 's(1)'",
    "echo 'ibase=2; 1010' | bc",
    "echo '100*1.15' | bc",
    "echo 'scale=3; 1/8' | bc",
    "echo '1.5 + 2.25' | bc",
    "echo '(3+5)/2' | bc",
    "echo 'scale=2; (120+80+95)/3' | bc",
    "x=$(echo 'scale=1; 7/2' | bc); echo \"x=$x\"",
    "echo 'obase=2; 255' | bc",
    "echo '2 > 1' | bc",
    "printf '1.5\\n2.5\\n' | paste -sd+ | bc",
    // failures: the exit status models test with $?
    "sort nofile.txt; echo $?",
    "cut list.txt; echo $?",
    "head -n abc list.txt; echo $?",
    "wc -l nofile.txt; echo $?",
    "sed 's/a/' list.txt; echo $?",
    "awk '{print' list.txt; echo $?",
    "grep -E '(' list.txt; echo $?",
    "find nodir; echo $?",
    "tr; echo $?",
    "uniq nofile.txt; echo $?",
    "echo '1/0' | bc; echo $?",
    "bc nofile.bc; echo $?",
    // quoting, blanks and other corners
    "printf '  b 2\\na 10\\n c 1\\n' | sort -k2n",
    "printf '  b\\na\\n c\\n' | sort",
    "printf 'b\\nA\\na\\nB\\n' | sort -uf",
    "printf 'a\\na\\nb' | uniq -c",
    "echo 'a/b\\\\c' | tr '\\\\' '/'",
    "echo 'x&y' | sed 's/&/and/'",
    "echo 'path/to/file' | sed 's/\\//\\\\/g'",
    "echo 'abc' | sed 's/b/[&]/'",
    "awk 'BEGIN {if (x == 0 && x == \"\") print \"both\"}'",
    "awk 'BEGIN {printf \"%s-%s|\\n\", \"a\"}'",
    "echo 'aaa' | grep -o 'a*'",
    "echo 'abab' | grep -E -o '(ab)\\1'",
    "echo \"'a b' c\" | xargs -n1",
    "echo 'a\\ b c' | xargs -n1",
    "printf '%s\\n' \"it's\"",
    "echo 'one two' | awk '{print $2, $1}' | tr ' ' ','",
    "seq 10 | awk 'NR % 3 == 1' | paste -sd' '",
    "printf 'k=v\\nx=y\\n' | cut -d= -f2 | sort -r",
    "printf 'a,b,,d\\n' | awk -F, '{print NF, $3 \"|\" $4}'",
    "printf 'a,b,,d\\n' | cut -d, -f3,4",
    "printf '10 apples\\n9 pears\\n100 figs\\n' | sort -n | head -1",
    "printf '10 apples\\n9 pears\\n100 figs\\n' | sort | head -1",
    "grep -c . data.csv nums.txt | sort -t: -k2 -n",
    "wc -l *.txt | sort -n",
    "ls *.csv *.tsv",
    "cat data.csv | awk -F, 'NR>1' | sort -t, -k3,3nr -k1,1 | head -n 2 | cut -d, -f1,3",
    "tr -s '[:space:]' '\\n' < words.txt | sort | uniq -c | sort -k1,1nr -k2 | head -3",
    "grep -o '[a-z]*' emails.txt | sort -u | head -5",
    "sed -n 's/.*@\\([a-z]*\\)\\..*/\\1/p' emails.txt",
    "awk '{for (i = NF; i > 0; i--) printf \"%s%s\", $i, (i > 1 ? \" \" : \"\\n\")}' words.txt",
    "head -c 3 list.txt | od -c | head -1",
    "printf '%s\\t%s\\n' a b | cut -f2",
    "printf '%s\\n' b a c | sort | tr '\\n' ' '; echo",
];

/// Rows whose bashkit answer differs from GNU's and is not fixed here: the command line,
/// GNU's stdout (checked against the host's too), and what bashkit does instead.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "printf '%.2f\\n' 2.675",
        "2.67\n",
        "bashkit's printf rounds the decimal text half to even (2.68); bash rounds the binary long double 2.67499999...",
    ),
    (
        "printf '%.2f %.2f %.3f\\n' 1.005 0.125 2.0005",
        "1.00 0.12 2.001\n",
        "the same: 2.0005 is 2.000500000000000000052... in binary, so bash rounds up; bashkit rounds the tie to even",
    ),
    (
        "grep -c error dir/*",
        "dir/a.csv:1\ndir/notes.md:1\ndir/sub:0\n",
        "GNU grep counts 0 for a directory operand (and says it is one on stderr); bashkit's prints no line for it",
    ),
    (
        "echo a b | xargs -n1 false; echo $?",
        "123\n",
        "GNU xargs exits 123 when a command it ran failed; bashkit's exits with the command's status (1)",
    ),
];

/// `bc` programs (given to `bc` or `bc -l` on stdin) and the answers POSIX / GNU bc give.
const BC_ROWS: &[(&str, &str, &str)] = &[
    ("", "scale=3; 22/7", "3.142\n"),
    ("", "scale=4; 2/3", ".6666\n"),
    ("", "scale=2; 10/4", "2.50\n"),
    ("", "10/4", "2\n"),
    ("", "-1/2; scale=1; -1/2", "0\n-.5\n"),
    ("", "scale=2; 1.234 * 1.234; scale=10; 1.234 * 1.234", "1.522\n1.522756\n"),
    ("", "scale=2; 7 % 3; scale=0; 7.5 % 2; -7 % 3", ".01\n1.5\n-1\n"),
    ("", "2^10; 2^-2; scale=3; 2^-2; 1.5^3", "1024\n0\n.250\n3.375\n"),
    ("", "-2^2; 2^3^2; (1+2)*3 - 4/2", "4\n512\n7\n"),
    ("", "sqrt(16); sqrt(2); scale=5; sqrt(2)", "4\n1\n1.41421\n"),
    ("", "length(123.45); scale(1.230); length(.001)", "5\n3\n3\n"),
    ("", "1 < 2; 2 <= 1; 3 == 3.0; 1 != 1; !0; 1 && 0; 0 || 5", "1\n0\n1\n0\n1\n0\n1\n"),
    ("", "x = 5; y = x * 2; y; x += 1; x; x++; ++x", "10\n6\n6\n8\n"),
    ("", "obase=16; 255; obase=2; 10; 5.25", "FF\n1010\n101.0100000\n"),
    ("", "ibase=16; FF; ibase=2; 1010", "255\n10\n"),
    ("", "obase=100; 12345", " 01 23 45\n"),
    ("", "0.5; -0.5; 1.50; 0.000", ".5\n-.5\n1.50\n0\n"),
    (
        "",
        "define f(n) { if (n <= 1) return (1); return (n * f(n - 1)); }\nf(25)",
        "15511210043330985984000000\n",
    ),
    (
        "",
        "define s(n) { auto i, t; for (i = 1; i <= n; i++) t += i; return (t); }\ns(100)",
        "5050\n",
    ),
    (
        "",
        "i = 0; while (i < 3) { i = i + 1; print i, \" \" }; print \"\\n\"",
        "1 2 3 \n",
    ),
    (
        "",
        "for (i = 0; i < 10; i++) { if (i == 2) continue; if (i > 4) break; i }",
        "0\n1\n3\n4\n",
    ),
    ("", "if (1 > 2) 10 else 20", "20\n"),
    ("", "a[2] = 7; a[2] * 2; a[5]", "14\n0\n"),
    ("", "x = 2\ndefine g() { return x }\ndefine h(x) { return g() }\nh(5); x", "5\n2\n"),
    ("", "/* a comment */ 1 + 1 # another\n3", "2\n3\n"),
    ("", "\"text\\n\"; print \"p\\tq\\n\"", "text\\np\tq\n"),
    ("", "1; 2\nquit\n3", "1\n2\n"),
    ("", "5\nlast * 2", "5\n10\n"),
    (
        "",
        "2^256",
        "11579208923731619542357098500868790785326998466564056403945758400791\\\n3129639936\n",
    ),
    (
        "",
        "scale=80; 1/3",
        ".3333333333333333333333333333333333333333333333333333333333333333333\\\n3333333333333\n",
    ),
    ("-l", "scale=20; 4*a(1)", "3.14159265358979323844\n"),
    ("-l", "e(1); l(2); s(1); c(1)", "2.71828182845904523536\n.69314718055994530941\n.84147098480789650665\n.54030230586813971740\n"),
    ("-l", "scale=5; l(100)/l(10); e(-1); a(-1)", "2.00000\n.36787\n-.78539\n"),
    ("-l", "j(1, 2); sqrt(2)", ".57672480775687338720\n1.41421356237309504880\n"),
    ("-l", "scale=50; 4*a(1)", "3.14159265358979323846264338327950288419716939937508\n"),
    ("-l", "1/3; scale=2; 1/3", ".33333333333333333333\n.33\n"),
    ("-l", "l(0); e(0)", "-99999999999999999999.00000000000000000000\n1.00000000000000000000\n"),
];

/// bc programs where runbox's bc and GNU bc 1.07 disagree on purpose: (flags, program,
/// GNU's stdout, runbox's stdout, why).
const BC_KNOWN_DIFFERENCES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "-l",
        "scale=2; c(4.276629)",
        "-.43\n",
        "-.42\n",
        "GNU's library is off in the last digit here (cos 4.276629 = -0.42209...); runbox's truncates the true value",
    ),
    (
        "-l",
        "scale=11; s(2.070334760)",
        ".87780375531\n",
        ".87780375530\n",
        "the same: sin 2.070334760 = 0.877803755309953...",
    ),
    (
        "-l",
        "scale=2; c(10)",
        "-.84\n",
        "-.83\n",
        "the same: cos 10 = -0.839071...",
    ),
    (
        "",
        "-.37365^147",
        "-0\n",
        "0\n",
        "GNU keeps the sign of a power that truncates to zero",
    ),
    (
        "",
        "x = 1; define f() { return 2 }; f()",
        "",
        "2\n",
        "GNU takes `define` only at the start of a line (a syntax error there)",
    ),
];

// --- running ---

/// The shell's stdout (the rows compare stdout and the exit status, not the messages).
#[derive(Default)]
struct Capture {
    stdout: Mutex<Vec<u8>>,
}

impl Output for Capture {
    fn stdout(&self, bytes: &[u8]) {
        self.stdout.lock().unwrap().extend_from_slice(bytes);
    }
    fn stderr(&self, _bytes: &[u8]) {}
}

/// What a command line printed on stdout and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    stdout: String,
    status: i32,
}

fn write_files(dir: &Path) {
    for (name, contents) in FILES {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// `line` in runbox's shell, on a fresh copy of the files, with `stdin`.
fn runbox(line: &str, stdin: Option<&str>) -> Answer {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    let capture = Arc::new(Capture::default());
    let mut shell = Shell::new(dir.path(), capture.clone(), Arc::new(NoCommands)).unwrap();
    let status = shell.run(&Script {
        code: line,
        args: &[],
        stdin: stdin.map(str::as_bytes),
    });
    let stdout = std::mem::take(&mut *capture.stdout.lock().unwrap());
    Answer {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        status,
    }
}

/// `line` in the host's bash with GNU's tools (gawk as `awk`), in the C locale.
fn gnu(line: &str, stdin: Option<&str>) -> Answer {
    let tools = gnu_tools();
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    let mut child = Command::new("/bin/bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir.path())
        .env("PATH", format!("{}:/usr/bin:/bin", tools.display()))
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot run /bin/bash");
    let input = stdin.unwrap_or_default().as_bytes().to_vec();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Answer {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        status: output.status.code().unwrap_or(-1),
    }
}

/// The GNU tools the rows use: each program and the text its `--version` must contain.
const GNU_TOOLS: &[(&str, &str, &str)] = &[
    // (program, Debian package, what its version output says)
    ("bash", "bash", "GNU bash"),
    ("sort", "coreutils", "GNU coreutils"),
    ("sed", "sed", "GNU sed"),
    ("gawk", "gawk", "GNU Awk"),
    ("grep", "grep", "GNU grep"),
    ("find", "findutils", "GNU findutils"),
    ("xargs", "findutils", "GNU findutils"),
    ("bc", "bc", "bc 1."),
];

fn has_gnu(program: &str, marker: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(marker))
}

/// A directory to put first on PATH, with `awk` being gawk; installs missing GNU tools
/// (once per test run), or panics saying which are missing.
fn gnu_tools() -> &'static Path {
    static TOOLS: OnceLock<tempfile::TempDir> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let missing: Vec<&str> = GNU_TOOLS
                .iter()
                .filter(|(program, _, marker)| !has_gnu(program, marker))
                .map(|(_, package, _)| *package)
                .collect();
            if !missing.is_empty() {
                eprintln!("gnu_tests: installing {} with apt-get", missing.join(" "));
                let install = |args: &[&str]| {
                    Command::new("apt-get")
                        .args(args)
                        .env("DEBIAN_FRONTEND", "noninteractive")
                        .output()
                        .is_ok_and(|o| o.status.success())
                };
                let mut args = vec!["install", "-y", "-q"];
                args.extend(&missing);
                if !install(&args) {
                    install(&["update", "-q"]);
                    install(&args);
                }
            }
            let still: Vec<&str> = GNU_TOOLS
                .iter()
                .filter(|(program, _, marker)| !has_gnu(program, marker))
                .map(|(program, _, _)| *program)
                .collect();
            assert!(
                still.is_empty(),
                "these GNU tools are missing on the host and apt-get could not install them: {} (Debian packages bash coreutils sed gawk grep findutils bc)",
                still.join(" ")
            );
            let dir = tempfile::tempdir().unwrap();
            let gawk = Command::new("sh")
                .args(["-c", "command -v gawk"])
                .output()
                .unwrap();
            let gawk = String::from_utf8_lossy(&gawk.stdout).trim().to_string();
            std::os::unix::fs::symlink(gawk, dir.path().join("awk")).unwrap();
            dir
        })
        .path()
}

// --- the tests ---

#[test]
fn text_tools_agree_with_gnu() {
    let mut failures = Vec::new();
    for &line in ROWS {
        let (ours, theirs) = (runbox(line, None), gnu(line, None));
        if ours != theirs {
            failures.push(format!(
                "`{line}`\n  GNU (status {}):\n{}\n  runbox (status {}):\n{}",
                theirs.status,
                indent(&theirs.stdout),
                ours.status,
                indent(&ours.stdout)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows differ from GNU:\n\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n\n")
    );
}

#[test]
fn known_differences_still_differ() {
    let mut failures = Vec::new();
    for &(line, gnu_stdout, note) in KNOWN_DIFFERENCES {
        let theirs = gnu(line, None);
        if theirs.stdout != gnu_stdout {
            failures.push(format!(
                "`{line}`: the host's GNU tools now print\n{}\ninstead of the answer written in the test",
                indent(&theirs.stdout)
            ));
        }
        if runbox(line, None).stdout == gnu_stdout {
            failures.push(format!(
                "`{line}` now agrees with GNU ({note}): move it from KNOWN_DIFFERENCES to ROWS"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn bc_line(flags: &str) -> String {
    format!("bc {flags}").trim_end().to_string()
}

#[test]
fn bc_gives_the_posix_answers() {
    let mut failures = Vec::new();
    for &(flags, program, expected) in BC_ROWS {
        let stdin = format!("{program}\n");
        let line = bc_line(flags);
        let ours = runbox(&line, Some(&stdin));
        let theirs = gnu(&line, Some(&stdin));
        for (who, answer) in [("runbox", &ours), ("GNU bc", &theirs)] {
            if answer.stdout != expected || answer.status != 0 {
                failures.push(format!(
                    "`{line}` on {program:?}: {who} printed {:?} (status {}), expected {expected:?}",
                    answer.stdout, answer.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bc_known_differences_still_differ() {
    let mut failures = Vec::new();
    for &(flags, program, gnu_stdout, runbox_stdout, why) in BC_KNOWN_DIFFERENCES {
        let stdin = format!("{program}\n");
        let line = bc_line(flags);
        let theirs = gnu(&line, Some(&stdin)).stdout;
        let ours = runbox(&line, Some(&stdin)).stdout;
        if theirs != gnu_stdout || ours != runbox_stdout {
            failures.push(format!(
                "`{line}` on {program:?} ({why}): GNU printed {theirs:?} (listed {gnu_stdout:?}), runbox {ours:?} (listed {runbox_stdout:?})"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A runaway recursion, plain or through nested statements, ends in an error on stderr
/// and bc goes on; a huge power or scale fails at once.
#[test]
fn bc_stops_runaway_programs() {
    let programs = [
        "define f(n) { return f(n + 1) + 1 }\nf(1)\n7\n",
        "define g(n) { auto i, t; for (i = 0; i < 1; i++) { if (n > -1) { t = (1 + (2 * (g(n + 1) + 1))) } }; return t }\ng(1)\n7\n",
        "2^99999999\nscale = 99999999\n7\n",
    ];
    for program in programs {
        assert_eq!(
            runbox("bc", Some(program)),
            Answer {
                stdout: "7\n".into(),
                status: 0
            },
            "{program}"
        );
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    |{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
