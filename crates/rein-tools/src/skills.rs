//! [`Skills`]: named instructions the model reads when it needs them.
//!
//! A folder of markdown files, each opening with front matter:
//!
//! ```text
//! ---
//! name: release-notes
//! title: Writing release notes
//! when: the person asks for release notes or a changelog entry
//! ---
//! (the instructions, in markdown)
//! ```
//!
//! `DIR/NAME.md` and `DIR/NAME/SKILL.md` are both read. The index (name and
//! when to use it) sits in the stable prefix; `read_skill` returns one
//! skill's text. Everything is checked at load — a missing folder, a file
//! without front matter, a missing or over-long field, a bad or repeated
//! name, a file too large — and refused whole with `skill_invalid` naming
//! the file, so nothing fails later in the middle of a turn.
//!
//! Not here: offering the index or the `read_skill` tool (the runner does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_wire::{AgentError, error::codes};

use crate::ToolSummary;

/// The largest skill file read (the whole file, front matter included).
pub const MAX_SKILL_BYTES: u64 = 64 * 1024;
/// The most skills one folder may hold.
pub const MAX_SKILLS: usize = 200;
/// The longest `name`, `title` or `when`, in characters.
const MAX_FIELD_CHARS: usize = 300;
const MAX_NAME_CHARS: usize = 64;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (`[a-z0-9_-]`, the model asks for it by this).
    pub name: String,
    /// A short title (the name when the file gives none).
    pub title: String,
    /// When to use it (one line; the index shows it).
    pub when: String,
    /// The instructions, the file after its front matter.
    pub text: String,
}

/// A loaded, checked set of skills, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    skills: BTreeMap<String, Skill>,
}

impl Skills {
    /// Load every skill in `dir`; any bad file refuses the whole folder.
    pub fn load(dir: &Path) -> Result<Skills, AgentError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|err| invalid(dir, format!("the skills folder cannot be read: {err}")))?;
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| invalid(dir, err.to_string()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|err| invalid(&path, err.to_string()))?;
            if kind.is_dir() {
                let inner = path.join("SKILL.md");
                if inner.is_file() {
                    files.push(inner);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
        files.sort();
        if files.len() > MAX_SKILLS {
            return Err(invalid(
                dir,
                format!("{} skills; at most {MAX_SKILLS} are loaded", files.len()),
            ));
        }
        let mut skills = BTreeMap::new();
        for file in files {
            let skill = read_one(&file)?;
            if let Some(earlier) = skills.insert(skill.name.clone(), skill) {
                return Err(invalid(
                    &file,
                    format!("a second skill named `{}`", earlier.name),
                ));
            }
        }
        Ok(Skills { skills })
    }

    /// Skills built in code (checked like files).
    pub fn from_skills(list: impl IntoIterator<Item = Skill>) -> Result<Skills, AgentError> {
        let mut skills = BTreeMap::new();
        for skill in list {
            check_name(Path::new(&skill.name), &skill.name)?;
            if skills.insert(skill.name.clone(), skill).is_some() {
                return Err(AgentError::new(
                    codes::SKILL_INVALID,
                    "a skill name is used twice",
                ));
            }
        }
        Ok(Skills { skills })
    }

    /// These skills and `other`'s (a plugin's folder beside the agent's
    /// own); a name in both is refused, naming it (`skill_invalid`).
    pub fn joined(mut self, other: Skills, from: &Path) -> Result<Skills, AgentError> {
        for (name, skill) in other.skills {
            if self.skills.contains_key(&name) {
                return Err(invalid(
                    from,
                    format!("a skill named `{name}` is given twice (here and in another folder)"),
                ));
            }
            self.skills.insert(name, skill);
        }
        if self.skills.len() > MAX_SKILLS {
            return Err(invalid(
                from,
                format!(
                    "{} skills in all; at most {MAX_SKILLS} are loaded",
                    self.skills.len()
                ),
            ));
        }
        Ok(self)
    }

    /// The index: name and when to use, sorted by name.
    pub fn index(&self) -> Vec<ToolSummary> {
        self.skills
            .values()
            .map(|s| ToolSummary {
                name: s.name.clone(),
                purpose: s.when.clone(),
            })
            .collect()
    }

    /// One skill's text, headed by its title.
    pub fn read(&self, name: &str) -> Option<String> {
        self.skills
            .get(name)
            .map(|s| format!("# {}\n\n{}", s.title, s.text))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

fn invalid(path: &Path, why: impl std::fmt::Display) -> AgentError {
    AgentError::new(codes::SKILL_INVALID, format!("{}: {why}", path.display()))
}

fn read_one(file: &Path) -> Result<Skill, AgentError> {
    let size = std::fs::metadata(file)
        .map_err(|err| invalid(file, err))?
        .len();
    if size > MAX_SKILL_BYTES {
        return Err(invalid(
            file,
            format!("{size} bytes; a skill is at most {MAX_SKILL_BYTES}"),
        ));
    }
    let raw = std::fs::read_to_string(file).map_err(|err| invalid(file, err))?;
    parse(file, &raw)
}

/// Parse one skill file's text (front matter, then the body).
fn parse(file: &Path, raw: &str) -> Result<Skill, AgentError> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let Some(rest) = raw
        .strip_prefix("---\n")
        .or_else(|| raw.strip_prefix("---\r\n"))
    else {
        return Err(invalid(
            file,
            "no front matter: the file must open with a `---` line",
        ));
    };
    let Some(end) = rest
        .find("\n---\n")
        .or_else(|| rest.find("\n---\r\n"))
        .or_else(|| rest.strip_suffix("\n---").map(str::len))
    else {
        return Err(invalid(
            file,
            "the front matter is not closed by a `---` line",
        ));
    };
    let (head, body) = rest.split_at(end);
    let body = body
        .trim_start_matches('\n')
        .trim_start_matches("---")
        .trim_start_matches(['\r', '\n']);
    let (mut name, mut title, mut when) = (None, None, None);
    for (n, line) in head.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(invalid(
                file,
                format!("front matter line {} is not `key: value`", n + 2),
            ));
        };
        let value = unquote(value.trim());
        if value.chars().count() > MAX_FIELD_CHARS {
            return Err(invalid(
                file,
                format!(
                    "`{}` is longer than {MAX_FIELD_CHARS} characters",
                    key.trim()
                ),
            ));
        }
        match key.trim() {
            "name" => name = Some(value.to_owned()),
            "title" => title = Some(value.to_owned()),
            // `description` is what other harnesses' skill files call it.
            "when" | "description" => when = Some(value.to_owned()),
            _ => {}
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid(file, "the front matter names no `name`"))?;
    check_name(file, &name)?;
    let when = when.filter(|w| !w.is_empty()).ok_or_else(|| {
        invalid(
            file,
            "the front matter says no `when` (when to use the skill)",
        )
    })?;
    if body.trim().is_empty() {
        return Err(invalid(
            file,
            "the skill has no text after its front matter",
        ));
    }
    Ok(Skill {
        title: title
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| name.clone()),
        name,
        when,
        text: body.to_owned(),
    })
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

fn check_name(file: &Path, name: &str) -> Result<(), AgentError> {
    let fine = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if fine {
        Ok(())
    } else {
        Err(invalid(
            file,
            format!("the name `{name}` is not 1–{MAX_NAME_CHARS} of a-z, 0-9, `-`, `_`"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> Result<Skill, AgentError> {
        parse(Path::new("s.md"), raw)
    }

    #[test]
    fn a_skill_reads_its_front_matter_and_body() {
        let skill =
            parsed("---\nname: notes\ntitle: \"Notes\"\nwhen: asked for notes\n---\nWrite them.\n")
                .expect("valid");
        assert_eq!(skill.name, "notes");
        assert_eq!(skill.title, "Notes");
        assert_eq!(skill.when, "asked for notes");
        assert_eq!(skill.text, "Write them.\n");
    }

    #[test]
    fn two_folders_join_and_a_name_in_both_is_refused() {
        let one = |name: &str| Skill {
            name: name.into(),
            title: name.into(),
            when: "asked".into(),
            text: "Do it.".into(),
        };
        let own = Skills::from_skills([one("notes")]).expect("valid");
        let plugin = Skills::from_skills([one("deploy")]).expect("valid");
        let joined = own
            .clone()
            .joined(plugin, Path::new("kit"))
            .expect("joined");
        assert_eq!(joined.len(), 2);
        let again = Skills::from_skills([one("notes")]).expect("valid");
        let err = own
            .joined(again, Path::new("kit"))
            .expect_err("a name twice");
        assert_eq!(err.code, codes::SKILL_INVALID);
        assert!(err.message.contains("`notes`"), "{}", err.message);
    }

    #[test]
    fn a_folder_loads_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("rein-skills-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("deploy")).expect("dir");
        std::fs::write(
            dir.join("notes.md"),
            "---\nname: notes\nwhen: asked for notes\n---\nWrite them.\n",
        )
        .expect("write");
        std::fs::write(
            dir.join("deploy/SKILL.md"),
            "---\nname: deploy\ndescription: shipping\n---\nShip it.\n",
        )
        .expect("write");
        std::fs::write(dir.join("README.txt"), "not a skill").expect("write");
        let skills = Skills::load(&dir).expect("valid folder");
        let names: Vec<String> = skills.index().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["deploy", "notes"]);
        assert_eq!(
            skills.read("deploy").as_deref(),
            Some("# deploy\n\nShip it.\n")
        );
        std::fs::write(dir.join("broken.md"), "no front matter").expect("write");
        let err = Skills::load(&dir).expect_err("one bad file refuses the folder");
        assert!(err.message.contains("broken.md"), "{}", err.message);
        std::fs::write(
            dir.join("broken.md"),
            "---\nname: notes\nwhen: again\n---\nx\n",
        )
        .expect("write");
        let err = Skills::load(&dir).expect_err("a name used twice");
        assert!(
            err.message.contains("a second skill named `notes`"),
            "{}",
            err.message
        );
        let missing = Skills::load(&dir.join("nowhere")).expect_err("missing folder");
        assert_eq!(missing.code, codes::SKILL_INVALID);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_skills_are_refused_with_the_reason() {
        for (raw, why) in [
            ("name: x\n", "no front matter"),
            ("---\nname: x\nwhen: y\nbody", "not closed"),
            ("---\nwhen: y\n---\nbody", "no `name`"),
            ("---\nname: x\n---\nbody", "no `when`"),
            ("---\nname: Bad Name\nwhen: y\n---\nbody", "is not 1–64"),
            ("---\nname: x\nwhen: y\n---\n  \n", "no text"),
            ("---\nname x\nwhen: y\n---\nbody", "not `key: value`"),
        ] {
            let err = parsed(raw).expect_err(raw);
            assert_eq!(err.code, codes::SKILL_INVALID);
            assert!(err.message.contains(why), "{raw:?}: {}", err.message);
        }
    }
}
