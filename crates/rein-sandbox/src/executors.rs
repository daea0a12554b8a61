//! Programs that run other programs, or delete, by their own options — a
//! way past a prefix rule when judged by their name alone: `find -exec rm`,
//! `find -delete`, `git -c alias.x='!rm …'`, `awk 'BEGIN{system(…)}'`,
//! `sed '1e rm …'`, `tar --to-command`, `watch 'rm …'`. A command line that
//! uses one is a script the policy cannot see into (asked, or refused
//! with `shell = false`), like a shell's `-c`.
//!
//! What an argv policy can promise: the program a command line names, seen
//! through the wrappers and the executing options this table knows. What
//! it cannot: what a program does with its files — a Makefile's recipes, a
//! test suite, a script a file holds, a tool's config. The sandbox, not
//! the policy, bounds those.
//!
//! Not here: the wrappers seen through (`executed`).

/// Options that make a program run another (or delete), by program name:
/// an argument equal to one, or starting with one that ends in `=`.
const EXECUTING: &[(&str, &[&str])] = &[
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls", "-fprintf",
        ],
    ),
    ("fd", &["-x", "--exec", "-X", "--exec-batch"]),
    ("fdfind", &["-x", "--exec", "-X", "--exec-batch"]),
    (
        "tar",
        &[
            "--to-command=",
            "--to-command",
            "-I",
            "--use-compress-program=",
            "--use-compress-program",
            "--checkpoint-action=",
            "--info-script=",
            "--new-volume-script=",
            "-F",
            "--rsh-command=",
        ],
    ),
    ("rsync", &["-e", "--rsh=", "--rsh", "--rsync-path="]),
    ("zip", &["-TT", "--unzip-command"]),
    ("script", &["-c", "--command", "--command="]),
    ("su", &["-c", "--command", "--command="]),
    ("runuser", &["-c", "--command", "--command="]),
    ("vim", &["-c", "--cmd", "-S"]),
    ("vi", &["-c", "--cmd", "-S"]),
    ("nvim", &["-c", "--cmd", "-S"]),
    ("ex", &["-c", "--cmd", "-S"]),
    ("emacs", &["--eval", "-eval", "--execute", "-l", "--load"]),
    ("gdb", &["-ex", "-x", "--command", "-iex", "-ix"]),
    ("less", &["+!", "--lesskey-src="]),
    ("make", &["--eval", "--eval=", "-E"]),
    ("npm", &["exec", "x", "--call", "-c"]),
    ("npx", &["-c", "--call"]),
];

/// Programs whose every run is a command line they hand a shell.
const ALWAYS: &[&str] = &["watch", "parallel"];

/// A git subcommand and the options of it that run a program.
const GIT_RUNNING: &[(&str, &[&str])] = &[
    ("rebase", &["--exec", "-x", "--exec="]),
    ("difftool", &["-x", "--extcmd", "--extcmd="]),
    ("mergetool", &["--tool", "-t"]),
    ("submodule", &["foreach"]),
    ("bisect", &["run"]),
    ("filter-branch", &[]),
    ("filter-repo", &[]),
    ("daemon", &[]),
    ("send-email", &["--sendmail-cmd", "--smtp-server"]),
];

/// The awk family: the first word that is no option is inline code, which
/// `system()` and pipes can run anything from.
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk"];

/// Why `program` with `args` runs more than its name says, if it does.
pub(crate) fn executes(program: &str, args: &[String]) -> Option<String> {
    if ALWAYS.contains(&program) {
        return Some(format!(
            "`{program}` runs what it is given as a command line"
        ));
    }
    if let Some((_, options)) = EXECUTING.iter().find(|(name, _)| *name == program)
        && let Some(option) = args.iter().find(|a| matches_any(a, options))
    {
        return Some(format!(
            "`{program} {option}` runs (or deletes) what rules never see"
        ));
    }
    if program == "git" {
        return git(args);
    }
    if AWKS.contains(&program) {
        return awk(args);
    }
    if program == "sed" {
        return sed(args);
    }
    None
}

/// `arg` is one of `options`: the word itself, one ending in `=` or `!`
/// with its value joined, or a short option with its value glued (`-Ish`).
fn matches_any(arg: &str, options: &[&str]) -> bool {
    options.iter().any(|o| {
        arg == *o
            || ((o.ends_with('=') || o.ends_with('!')) && arg.starts_with(o))
            || (o.len() == 2 && o.starts_with('-') && arg.starts_with(o))
    })
}

/// git's options before its subcommand that set config (an alias, a
/// pager, a hook path: each names a program git runs).
const GIT_GLOBAL: &[&str] = &["-c", "--config-env", "--config-env=", "--exec-path="];

/// A git command line that runs a program: config given before the
/// subcommand, or a subcommand that runs one.
fn git(args: &[String]) -> Option<String> {
    // The subcommand: the first word that is neither an option nor the
    // value of one.
    let mut at = None;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        if [
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
        ]
        .contains(&word.as_str())
        {
            i += 2;
            continue;
        }
        if !word.starts_with('-') {
            at = Some(i);
            break;
        }
        i += 1;
    }
    let before = &args[..at.unwrap_or(args.len())];
    if let Some(option) = before.iter().find(|a| {
        GIT_GLOBAL
            .iter()
            .any(|o| a.as_str() == *o || (o.ends_with('=') && a.starts_with(o)))
    }) {
        return Some(format!(
            "`git {option}` sets config that can name a program git runs"
        ));
    }
    let sub = &args[at?];
    let (_, options) = GIT_RUNNING.iter().find(|(name, _)| name == sub)?;
    let runs = options.is_empty() || args.iter().any(|a| matches_any(a, options));
    runs.then(|| format!("`git {sub}` runs a program of its own choosing"))
}

/// awk with its program inline (not `-f FILE`).
fn awk(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-f" | "--file" => return None,
            "-v" | "-F" | "--assign" | "--field-separator" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            _ => return Some("an awk program given inline (it may call `system`)".into()),
        }
    }
    None
}

/// sed whose script may run a command: an `e` command, an `s` command's
/// `e` flag, or a script that cannot be read plainly. `--sandbox` turns
/// them off in GNU sed.
fn sed(args: &[String]) -> Option<String> {
    if args.iter().any(|a| a == "--sandbox") {
        return None;
    }
    let mut scripts = Vec::new();
    let mut words = args.iter();
    let mut given = false;
    while let Some(word) = words.next() {
        match word.as_str() {
            "-e" | "--expression" => {
                given = true;
                scripts.extend(words.next().cloned());
            }
            "-f" | "--file" => return Some("a sed script from a file (it may use `e`)".into()),
            w if w.starts_with("--expression=") => {
                given = true;
                scripts.push(w["--expression=".len()..].to_owned());
            }
            w if w.starts_with('-') => {}
            w if !given => {
                given = true;
                scripts.push(w.to_owned());
            }
            _ => {}
        }
    }
    scripts
        .iter()
        .any(|s| !sed_plain(s))
        .then(|| "a sed script that may run a command (`e`)".into())
}

/// Whether a sed script surely runs nothing: read command by command, an
/// `e` command or an `s///e` flag — or anything not read plainly — is not.
fn sed_plain(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // An address: line numbers, `$`, `/regex/`, ranges and `!`.
        while i < chars.len() && (chars[i].is_ascii_digit() || " ,$!~+;{}\n\t".contains(chars[i])) {
            i += 1;
        }
        if i < chars.len() && chars[i] == '/' {
            let Some(end) = delimited(&chars, i, 1) else {
                return false;
            };
            i = end;
            continue;
        }
        let Some(&command) = chars.get(i) else {
            return true;
        };
        i += 1;
        match command {
            'e' => return false,
            's' | 'y' => {
                let Some(end) = delimited(&chars, i, 2) else {
                    return false;
                };
                i = end;
                while i < chars.len() && !";\n}".contains(chars[i]) {
                    if command == 's' && chars[i] == 'e' {
                        return false;
                    }
                    // `w FILE` takes the rest of the line.
                    if command == 's' && chars[i] == 'w' {
                        break;
                    }
                    i += 1;
                }
                i = skip_line_if(&chars, i, command == 's');
            }
            // Text, labels, file names: to the end of the line.
            'a' | 'i' | 'c' | ':' | 'b' | 't' | 'T' | 'r' | 'R' | 'w' | 'W' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'l' | '=' | 'q'
            | 'Q' | 'z' | 'F' => {}
            _ => return false,
        }
    }
    true
}

/// After `s///flags`: a `w` flag's file name runs to the end of the line.
fn skip_line_if(chars: &[char], mut i: usize, write_flag: bool) -> usize {
    if write_flag && chars.get(i) == Some(&'w') {
        while i < chars.len() && chars[i] != '\n' {
            i += 1;
        }
    }
    i
}

/// The index past `parts` parts delimited by the character at `start`
/// (`s/a/b/` has two after its first `/`; `/re/` one), backslashes
/// escaping; `None` when it does not close.
fn delimited(chars: &[char], start: usize, parts: usize) -> Option<usize> {
    let delimiter = *chars.get(start)?;
    if delimiter == '\n' || delimiter == '\\' {
        return None;
    }
    let mut i = start + 1;
    let mut left = parts;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == delimiter => {
                left -= 1;
                i += 1;
                if left == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(line: &str) -> bool {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        executes(&words[0], &words[1..]).is_some()
    }

    #[test]
    fn executing_options_are_scripts() {
        for line in [
            "find . -name x -delete",
            "find . -exec rm {} ;",
            "find . -execdir sh -c x ;",
            "git -c alias.x=!rm x",
            "git --config-env=core.pager=X log",
            "git rebase -x make HEAD~3",
            "git -C sub rebase --exec make main",
            "git submodule foreach rm x",
            "git bisect run ./t.sh",
            "awk BEGIN{system(\"rm\")}",
            "gawk -v a=1 {print}",
            "sed 1e",
            "sed -n 1erm",
            "sed s/a/b/e",
            "sed -e p -e s|a|b|e",
            "sed -f script.sed x",
            "tar --to-command=sh -xf a.tar",
            "tar -I sh -xf a.tar",
            "watch ls",
            "vim -c !rm x",
            "rsync -e sh a b",
        ] {
            assert!(runs(line), "{line}");
        }
    }

    #[test]
    fn ordinary_uses_are_not() {
        for line in [
            "find . -name *.rs",
            "find . -type f -newer x",
            "git log -n 3",
            "git status",
            "git commit -c HEAD",
            "git commit -m x",
            "git rebase main",
            "awk -f prog.awk x",
            "sed -n 1,10p x",
            "sed s/hello/world/g x",
            "sed -e s/a/b/w out.txt x",
            "sed -i s|x|y|2 f",
            "sed --sandbox 1e",
            "sed /start/,/end/d x",
            "tar -xf a.tar",
            "rsync -a a b",
            "cargo test",
        ] {
            assert!(!runs(line), "{line}");
        }
    }
}
