//! What a command line will execute, as the command policy judges it: the
//! program by its name (`/usr/bin/rm` is `rm`), seen through the wrappers
//! that run another command (`env`, `nice`, `timeout`, `xargs`, …), and
//! whether it is a script the policy cannot see into (a shell's `-c`, an
//! interpreter's `-c`/`-e`, `env -S`, and the executing options of the
//! programs that run others: `executors`). A path or a wrapper is then no
//! way past a rule.
//!
//! Not here: what the policy decides (`policy`).

/// A wrapper: its name, its options that take a separate value, and how
/// many positional words come before the command it runs.
struct Wrapper {
    name: &'static str,
    with_value: &'static [&'static str],
    positional: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "env",
        with_value: &["-u", "--unset", "-C", "--chdir"],
        positional: 0,
    },
    Wrapper {
        name: "nice",
        with_value: &["-n", "--adjustment"],
        positional: 0,
    },
    Wrapper {
        name: "nohup",
        with_value: &[],
        positional: 0,
    },
    Wrapper {
        name: "timeout",
        with_value: &["-s", "--signal", "-k", "--kill-after"],
        positional: 1,
    },
    Wrapper {
        name: "xargs",
        with_value: &[
            "-I",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-d",
            "--delimiter",
            "-s",
            "--max-chars",
            "-L",
            "--max-lines",
            "-a",
            "--arg-file",
            "-E",
        ],
        positional: 0,
    },
    Wrapper {
        name: "stdbuf",
        with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
        positional: 0,
    },
    Wrapper {
        name: "ionice",
        with_value: &["-c", "--class", "-n", "--classdata"],
        positional: 0,
    },
    Wrapper {
        name: "setsid",
        with_value: &[],
        positional: 0,
    },
    Wrapper {
        name: "time",
        with_value: &["-f", "--format", "-o", "--output"],
        positional: 0,
    },
    Wrapper {
        name: "command",
        with_value: &[],
        positional: 0,
    },
    Wrapper {
        name: "chrt",
        with_value: &[],
        positional: 1,
    },
    Wrapper {
        name: "taskset",
        with_value: &[],
        positional: 1,
    },
    Wrapper {
        name: "flock",
        with_value: &["-w", "--timeout", "-E", "--conflict-exit-code"],
        positional: 1,
    },
    Wrapper {
        name: "sudo",
        with_value: &[
            "-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U",
        ],
        positional: 0,
    },
    Wrapper {
        name: "busybox",
        with_value: &[],
        positional: 0,
    },
];

/// Shells: with `-c` they run a script the policy cannot see into.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
];

/// Interpreters and the flags that make them run code given inline.
const INLINE: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python3", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("php", &["-r"]),
];

/// What a command line executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Executed {
    /// This command, its program named by its file name.
    Command(Vec<String>),
    /// A script the policy cannot see into, and what makes it one.
    Script(String),
}

/// The file name of a program named by a path.
pub(crate) fn program_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// What `argv` executes, through at most eight wrappers.
pub(crate) fn executed(argv: &[String]) -> Executed {
    let mut at = 0;
    for _ in 0..8 {
        let Some(program) = argv.get(at).map(|p| program_name(p)) else {
            break;
        };
        let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == program) else {
            break;
        };
        let mut i = at + 1;
        let mut positional = wrapper.positional;
        while let Some(word) = argv.get(i) {
            if word == "--" {
                i += 1;
                break;
            }
            if program == "env" && (word.starts_with("-S") || word.starts_with("--split-string")) {
                return Executed::Script("`env -S` runs a string as a command line".into());
            }
            if word.starts_with('-') && word.len() > 1 {
                i += if wrapper.with_value.contains(&word.as_str()) {
                    2
                } else {
                    1
                };
                continue;
            }
            if program == "env" && word.contains('=') {
                i += 1;
                continue;
            }
            if positional > 0 {
                positional -= 1;
                i += 1;
                continue;
            }
            break;
        }
        if i >= argv.len() {
            // The wrapper runs nothing else: it is judged as itself.
            break;
        }
        at = i;
    }
    let mut command: Vec<String> = argv[at.min(argv.len())..].to_vec();
    if let Some(first) = command.first_mut() {
        *first = program_name(first).to_owned();
    }
    if let Some(why) = script(&command) {
        return Executed::Script(why);
    }
    Executed::Command(command)
}

/// Why `command` is a script the policy cannot see into, if it is one.
fn script(command: &[String]) -> Option<String> {
    let (program, args) = command.split_first()?;
    if let Some(why) = crate::executors::executes(program, args) {
        return Some(why);
    }
    let flags = args.iter().filter(|a| a.starts_with('-'));
    if SHELLS.contains(&program.as_str()) {
        let inline = flags
            .clone()
            .any(|a| !a.starts_with("--") && a.contains('c'));
        return inline.then(|| format!("a `{program} -c` script"));
    }
    let base = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let (_, inline) = INLINE
        .iter()
        .find(|(name, _)| *name == program.as_str() || *name == base)?;
    flags
        .clone()
        .any(|a| {
            inline
                .iter()
                .any(|f| a == f || (f.len() == 2 && a.starts_with(f)))
        })
        .then(|| format!("code given inline to `{program}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn command(s: &str) -> Vec<String> {
        match executed(&argv(s)) {
            Executed::Command(c) => c,
            Executed::Script(why) => panic!("{s}: a script: {why}"),
        }
    }

    #[test]
    fn paths_and_wrappers_are_seen_through() {
        for (line, runs) in [
            ("/usr/bin/rm -rf x", "rm -rf x"),
            ("env rm x", "rm x"),
            ("env -i A=1 B=2 /bin/rm x", "rm x"),
            ("/usr/bin/env -u HOME rm x", "rm x"),
            ("nice -n 5 rm x", "rm x"),
            ("nice -n5 rm x", "rm x"),
            ("timeout 5 rm x", "rm x"),
            ("timeout -s KILL 5 rm x", "rm x"),
            ("nohup nice env rm x", "rm x"),
            ("xargs -n 1 rm", "rm"),
            ("stdbuf -oL rm x", "rm x"),
            ("busybox rm x", "rm x"),
            ("cargo test", "cargo test"),
            ("env", "env"),
        ] {
            assert_eq!(command(line), argv(runs), "{line}");
        }
    }

    #[test]
    fn scripts_are_seen_wherever_they_hide() {
        for line in [
            "sh -c ls",
            "/bin/dash -c ls",
            "/usr/bin/env sh -c ls",
            "env -S ls",
            "nice bash -lc ls",
            "timeout 5 zsh -c ls",
            "python3 -c print(1)",
            "python3.11 -c print(1)",
            "perl -e 1",
            "node --eval 1",
        ] {
            assert!(
                matches!(executed(&argv(line)), Executed::Script(_)),
                "{line}"
            );
        }
        assert_eq!(command("python3 -m pytest"), argv("python3 -m pytest"));
        assert_eq!(command("bash build.sh"), argv("bash build.sh"));
    }
}
