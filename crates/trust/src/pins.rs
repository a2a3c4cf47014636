//! What trust pins: the files a project's held-back values will run, by
//! content, or why they cannot be pinned (see the crate's docs).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The most files one project pins by content (names pinned as absent do
/// not count). Past it the project is not trusted: it is asked about each
/// time, naming this budget ([`Pins::unpinnable`]).
pub const MAX_PINNED_FILES: usize = 256;

/// The most bytes hashed for one project, all files together (the hashing
/// runs at every start). Past it, as past [`MAX_PINNED_FILES`].
pub const MAX_PINNED_BYTES: u64 = 256 << 20;

/// The record format of the pins: records of an earlier format (which
/// pinned less) are asked about again, saying so.
pub(super) const PIN_FORMAT: u64 = 3;

/// What trust pins of a project's held-back values: every file they name
/// (a command, a script among the arguments, a file in `env`, a word of a
/// shell command line), by content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pins {
    /// Canonical path → SHA-256 of the content, `absent`, or `directory`
    /// (whose entries are pinned too).
    pub files: Map<String, Value>,
    /// Links inside the project to something outside it, pinned by their
    /// target: (the link, relative to the project; the target).
    pub links_out: Vec<(String, PathBuf)>,
    /// What could not be pinned completely and exactly, one line each; any
    /// makes the project untrusted until asked again.
    pub unpinnable: Vec<String>,
}

/// The files `held_back` would run in `project`, pinned (see [`Pins`]).
///
/// Names are resolved the way the programs are started: against the project
/// (where every program starts), against a server's `cwd`, and (a bare
/// command) along `PATH` (the server's own `env.PATH` when it sets one).
/// `mcpServers` strings are pinned after the agent's `${VAR:-default}`
/// expansion, as the server will see them. A shell command line
/// (`shellCommandPrefix`, a shell server's arguments) is split into words;
/// one whose words depend on expansion (`$`, backticks, globs, `~`, braces,
/// backslashes) cannot be pinned. Files outside the project are the user's
/// and are not pinned, except through a link inside the project (pinned by
/// the target, and shown in the trust question). A FIFO, socket or device,
/// a name that cannot be resolved, and anything past the budgets
/// ([`MAX_PINNED_FILES`], [`MAX_PINNED_BYTES`]) cannot be pinned.
pub fn pins(project: &Path, held_back: &Map<String, Value>) -> Pins {
    let root = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let process_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // The repository holding the project is written by the same hands:
    // `../run.sh` from a monorepo's subdirectory is pinned like `./run.sh`.
    let boundary = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(&root)
        .to_path_buf();
    // A relative entry of the agent's own PATH is looked up from where each
    // program starts, not from the agent's own directory.
    let process_path = relative_to(&process_path, std::slice::from_ref(&root));
    let mut pinner = Pinner {
        boundary,
        root: root.clone(),
        pins: Pins::default(),
        bytes: 0,
        over_budget: false,
    };
    for (key, value) in held_back {
        match (key.as_str(), value) {
            ("mcpServers", Value::Object(servers)) => {
                for (name, server) in servers {
                    pinner.server(name, server, &process_path);
                }
            }
            ("shellCommandPrefix", Value::String(line)) => {
                pinner.shell_line(
                    line,
                    "shellCommandPrefix",
                    std::slice::from_ref(&root),
                    &process_path,
                );
            }
            _ => {
                let mut texts = Vec::new();
                strings(value, &mut texts);
                for text in texts {
                    pinner.word(text, std::slice::from_ref(&root), &process_path);
                }
            }
        }
    }
    // Trust covers what the project's skills and prompt templates say.
    for file in agent_skills::project_files(&root) {
        pinner.path(&file, false);
    }
    pinner.pins
}

/// Whether an argument reads like a shell command line rather than one
/// word: a blank or a character the shell treats specially.
fn reads_like_a_line(arg: &str) -> bool {
    arg.chars()
        .any(|c| c.is_whitespace() || ";&|()<>$`\\*?[{~\"'".contains(c))
}

/// Interpreters that load modules beside their script.
fn is_interpreter(word: &str) -> bool {
    let name = Path::new(word)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.starts_with("python")
        || matches!(
            name.as_str(),
            "node" | "nodejs" | "deno" | "bun" | "ruby" | "perl" | "php" | "tsx" | "ts-node"
        )
}

/// Files an interpreter may load as code.
const SOURCE_SUFFIXES: [&str; 12] = [
    ".py", ".pth", ".js", ".mjs", ".cjs", ".ts", ".mts", ".json", ".rb", ".pl", ".pm", ".php",
];

/// What an interpreter adds to a module name it is given.
const MODULE_SUFFIXES: [&str; 8] = [".js", ".mjs", ".cjs", ".ts", ".py", ".sh", ".rb", ".pl"];
/// What an interpreter runs for a directory it is given.
const MODULE_INDEXES: [&str; 3] = ["index.js", "__main__.py", "package.json"];

/// Programs that run what a file in their working directory says, and
/// those files: pinned wherever the program is named (a command, an
/// argument, a word of a command line).
const PROJECT_FILES_READ_BY: &[(&str, &[&str])] = &[
    ("make", &["Makefile", "makefile", "GNUmakefile"]),
    ("gmake", &["Makefile", "makefile", "GNUmakefile"]),
    ("npm", &["package.json", ".npmrc"]),
    ("npx", &["package.json", ".npmrc"]),
    ("yarn", &["package.json", ".yarnrc", ".yarnrc.yml"]),
    ("pnpm", &["package.json", ".npmrc"]),
    ("bun", &["package.json", "bunfig.toml"]),
    ("bunx", &["package.json", "bunfig.toml"]),
    ("node", &["package.json"]),
    ("deno", &["deno.json", "deno.jsonc"]),
    (
        "cargo",
        &[
            "Cargo.toml",
            "build.rs",
            ".cargo/config.toml",
            ".cargo/config",
        ],
    ),
    ("uv", &["pyproject.toml", "uv.toml"]),
    ("uvx", &["pyproject.toml", "uv.toml"]),
    ("poetry", &["pyproject.toml"]),
    ("pipenv", &["Pipfile"]),
    ("just", &["justfile", "Justfile", ".justfile"]),
    ("rake", &["Rakefile"]),
    ("bundle", &["Gemfile"]),
];

/// The interpreter words of the `#!` line of the file at `path` (`env`'s
/// program too), or none.
fn shebang_words(path: &Path) -> Vec<String> {
    use std::io::Read;
    let Ok(Some(file)) =
        agent_tool::regular_file::open_regular(path, agent_tool::regular_file::Links::Refuse)
    else {
        return Vec::new();
    };
    let mut head = Vec::with_capacity(256);
    if file.take(256).read_to_end(&mut head).is_err() || !head.starts_with(b"#!") {
        return Vec::new();
    }
    let line = head[2..].split(|&b| b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `path`'s entries, a relative one taken from each of `bases`.
fn relative_to(path: &[PathBuf], bases: &[PathBuf]) -> Vec<PathBuf> {
    path.iter()
        .flat_map(|d| {
            if d.is_relative() {
                bases.iter().map(|b| b.join(d)).collect()
            } else {
                vec![d.clone()]
            }
        })
        .collect()
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Shells whose non-option arguments are command lines (`sh -c '...'`) or
/// scripts.
const SHELLS: [&str; 9] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox",
];

struct Pinner {
    /// The project, or the repository holding it: what it names inside
    /// this is pinned, what lies outside is the user's.
    boundary: PathBuf,
    /// The project: where its programs start.
    root: PathBuf,
    pins: Pins,
    bytes: u64,
    over_budget: bool,
}

impl Pinner {
    fn refuse(&mut self, what: String) {
        if !self.pins.unpinnable.contains(&what) {
            self.pins.unpinnable.push(what);
        }
    }

    /// One `mcpServers` entry, as `agent_mcp` will start it.
    fn server(&mut self, name: &str, server: &Value, process_path: &[PathBuf]) {
        if server.get("url").is_some() {
            // An HTTP server: nothing local is started.
            return;
        }
        let expand = |v: &Value| v.as_str().and_then(|s| crate::env_vars::expand(s).ok());
        let mut bases = vec![self.root.clone()];
        if let Some(cwd) = server.get("cwd").and_then(expand) {
            let dir = agent_tool::path::normalize_path(&self.root.join(&cwd));
            if !dir.starts_with(&self.boundary) {
                self.refuse(format!(
                    "mcpServers.{name}.cwd {cwd:?} leads out of the project, so what runs there is not pinned"
                ));
            }
            bases.push(dir);
        }
        let env: Vec<(String, String)> = server
            .get("env")
            .and_then(Value::as_object)
            .map(|vars| {
                vars.iter()
                    .filter_map(|(k, v)| Some((k.clone(), expand(v)?)))
                    .collect()
            })
            .unwrap_or_default();
        // A server's own PATH is where its bare command is looked up.
        let lookup: Vec<PathBuf> = match env.iter().find(|(k, _)| k == "PATH") {
            Some((_, path)) => std::env::split_paths(path)
                .flat_map(|d| bases.iter().map(move |b| b.join(&d)))
                .collect(),
            None => relative_to(process_path, &bases),
        };
        let command = server.get("command").and_then(expand).unwrap_or_default();
        self.word(&command, &bases, &lookup);
        let shell = SHELLS.contains(
            &Path::new(&command)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
                .as_str(),
        );
        let args: Vec<String> = server
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(expand)
            .collect();
        // An interpreter loads the modules beside its script (Python's
        // `sys.path[0]`, Node's relative `require`, `-m` from the start
        // directory): the source files there are pinned with the script,
        // or the project cannot be pinned (the budget).
        let words = std::iter::once(&command).chain(args.iter());
        if let Some(at) = words.clone().position(|w| is_interpreter(w)) {
            for arg in words.skip(at + 1) {
                if arg == "-m" {
                    for base in bases.clone() {
                        self.source_tree(&base, 0);
                    }
                    continue;
                }
                for base in bases.clone() {
                    let script = base.join(arg);
                    if script.is_file()
                        && let Some(dir) = script.parent()
                    {
                        self.source_tree(dir, 0);
                    }
                }
            }
        }
        for arg in args {
            // Through a wrapper (`env sh -c '...'`, `nice bash -c`) a shell
            // line is an argument of some other program: anything that reads
            // like one is taken as one.
            if (shell && !arg.starts_with('-')) || reads_like_a_line(&arg) {
                // A command line or a script: the shell expands it.
                self.shell_line(&arg, &format!("mcpServers.{name}.args"), &bases, &lookup);
            } else {
                self.word(&arg, &bases, &lookup);
            }
        }
        // Variables name files too (`BASH_ENV`, `LD_PRELOAD`,
        // `NODE_OPTIONS=--require ./x.js`, `PYTHONPATH`).
        for (_, value) in &env {
            for piece in value.split(|c: char| c.is_whitespace() || c == ':') {
                self.word(piece, &bases, &lookup);
            }
        }
    }

    /// A command line run by a shell: its words pinned, or refused when
    /// they depend on what the shell expands.
    fn shell_line(&mut self, line: &str, key: &str, bases: &[PathBuf], lookup: &[PathBuf]) {
        self.shell_line_within(line, key, bases, lookup, 0);
    }

    /// [`shell_line`](Self::shell_line), `depth` lines deep: a quoted word
    /// that reads like a line (`sh -c ". ./x"`, `eval 'source x'`) is a
    /// line of its own.
    fn shell_line_within(
        &mut self,
        line: &str,
        key: &str,
        bases: &[PathBuf],
        lookup: &[PathBuf],
        depth: usize,
    ) {
        const MAX_NESTING: usize = 4;
        match shell_words(line) {
            Ok(words)
                if words.iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "cd" | "pushd" | "popd" | "source" | "." | "eval"
                    )
                }) =>
            {
                self.refuse(format!(
                    "{key} {line:?}: it changes directory, evaluates text or reads another file, so which files it runs is not fixed"
                ));
            }
            Ok(_) if depth >= MAX_NESTING => self.refuse(format!(
                "{key} {line:?}: command lines nested more than {MAX_NESTING} deep"
            )),
            Ok(words) => {
                for word in words {
                    if reads_like_a_line(&word) {
                        self.shell_line_within(&word, key, bases, lookup, depth + 1);
                    } else {
                        self.word(&word, bases, lookup);
                    }
                }
            }
            Err(c) => self.refuse(format!(
                "{key} {line:?}: the shell expands `{c}`, so which files it runs is not fixed"
            )),
        }
    }

    /// One word that may name a file: itself, and what follows an `=`
    /// (`--config=./x`, `VAR=./y`).
    fn word(&mut self, word: &str, bases: &[PathBuf], lookup: &[PathBuf]) {
        let mut texts = vec![word];
        if let Some((_, value)) = word.split_once('=') {
            texts.push(value);
        }
        for text in texts {
            // Longer than PATH_MAX: no file has that name.
            if text.is_empty() || text.len() > 4096 {
                continue;
            }
            if ["/proc/", "/dev/fd/", "/dev/stdin"]
                .iter()
                .any(|p| text.starts_with(p))
            {
                self.refuse(format!(
                    "{text}: names a file through /proc or /dev/fd, which depends on the process that opens it"
                ));
                continue;
            }
            for (program, files) in PROJECT_FILES_READ_BY {
                if Path::new(text).file_name() == Some(std::ffi::OsStr::new(program)) {
                    for file in *files {
                        for base in bases {
                            self.path(&base.join(file), false);
                        }
                    }
                }
            }
            let mut candidates: Vec<PathBuf> = bases.iter().map(|b| b.join(text)).collect();
            // A module name an interpreter completes (`node srv` runs
            // `srv.js`, `python3 -m srv` runs `srv.py`).
            let bare = Path::new(text)
                .file_name()
                .is_some_and(|n| !n.to_string_lossy().contains('.'));
            if bare && !text.starts_with('-') {
                for base in bases {
                    let named = base.join(text);
                    candidates.extend(MODULE_SUFFIXES.iter().map(|suffix| {
                        let mut with = named.clone().into_os_string();
                        with.push(suffix);
                        PathBuf::from(with)
                    }));
                    candidates.extend(MODULE_INDEXES.iter().map(|index| named.join(index)));
                }
            }
            let climbs = Path::new(text)
                .components()
                .any(|c| c == std::path::Component::ParentDir);
            if climbs
                && candidates
                    .iter()
                    .any(|c| !agent_tool::path::normalize_path(c).starts_with(&self.boundary))
            {
                self.refuse(format!(
                    "{text}: leads out of the project with `..`, so it cannot be pinned"
                ));
                continue;
            }
            if !text.contains('/') {
                candidates.extend(lookup.iter().map(|d| d.join(text)));
            }
            for candidate in candidates {
                self.path(&candidate, false);
            }
        }
    }

    /// Pins `candidate`: when it is in the project, or leads out of it
    /// through a link inside it, or (`reached`) was found in a pinned
    /// directory.
    fn path(&mut self, candidate: &Path, reached: bool) {
        if self.over_budget {
            return;
        }
        let lexical = agent_tool::path::normalize_path(candidate);
        let inside = |p: &Path| p.starts_with(&self.boundary) && p != self.boundary;
        let real = match std::fs::canonicalize(candidate) {
            Ok(real) => real,
            // Nothing there (a file on the way is no directory either).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                lexical.clone()
            }
            Err(e) => {
                if inside(&lexical) || reached {
                    self.refuse(format!("{}: {e}", self.shown(&lexical)));
                }
                return;
            }
        };
        if real == self.root || real == self.boundary {
            // The project itself (`.`): its files are not all programs.
            return;
        }
        if !inside(&real) {
            if !(inside(&lexical) || reached) {
                // The user's own files, outside the project.
                return;
            }
            if inside(&lexical) {
                let link = self.shown(&lexical);
                if !self.pins.links_out.iter().any(|(l, _)| *l == link) {
                    self.pins.links_out.push((link, real.clone()));
                }
            }
        }
        let key = real.display().to_string();
        if self.pins.files.contains_key(&key) {
            return;
        }
        if self.pins.files.values().filter(|v| *v != "absent").count() >= MAX_PINNED_FILES {
            self.over_budget = true;
            self.refuse(format!(
                "more than {MAX_PINNED_FILES} files to pin (the trust budget); {} and later ones are not pinned",
                self.shown(&lexical)
            ));
            return;
        }
        let meta = match std::fs::symlink_metadata(&real) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                self.pins.files.insert(key, Value::from("absent"));
                return;
            }
            Err(e) => {
                self.refuse(format!("{}: {e}", self.shown(&lexical)));
                return;
            }
            Ok(m) => m,
        };
        if meta.is_dir() {
            self.pins.files.insert(key, Value::from("directory"));
            self.directory(&real);
            return;
        }
        match self.hash(&real) {
            Ok(digest) => {
                self.pins.files.insert(key, Value::from(digest));
                // A script runs its `#!` interpreter, which may be the
                // project's own (`#!./interp`): pinned too, from the
                // project, where the kernel looks for a relative one.
                for word in shebang_words(&real) {
                    let root = self.root.clone();
                    self.word(&word, std::slice::from_ref(&root), &[]);
                }
            }
            Err(why) => self.refuse(format!("{}: {why}", self.shown(&lexical))),
        }
    }

    /// The source files below `dir` (inside the project), pinned: what an
    /// interpreter started on a script there may import. Dot directories and
    /// installed packages (`node_modules`, virtual environments) are left
    /// out; past the budget the project cannot be pinned.
    fn source_tree(&mut self, dir: &Path, depth: usize) {
        const MAX_DEPTH: usize = 8;
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if depth > MAX_DEPTH || self.over_budget || !real.starts_with(&self.boundary) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            return;
        };
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = entries
            .flatten()
            .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, kind) in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if kind.is_dir() {
                if !name.starts_with('.')
                    && !matches!(
                        name.as_str(),
                        "node_modules" | "__pycache__" | "venv" | "site-packages" | "target"
                    )
                {
                    self.source_tree(&path, depth + 1);
                }
            } else if SOURCE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                self.path(&path, true);
            }
        }
    }

    /// A directory's entries, pinned in name order: a file added, removed
    /// or changed in it changes the pins.
    fn directory(&mut self, dir: &Path) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.refuse(format!("{}: {e}", self.shown(dir)));
                return;
            }
        };
        let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for name in names {
            self.path(&name, true);
        }
    }

    /// The SHA-256 of the regular file at `real` (canonical: no link to
    /// follow), opened without blocking on a FIFO, within the byte budget.
    fn hash(&mut self, real: &Path) -> Result<String, String> {
        use sha2::Digest;
        use std::io::Read;
        let mut file = match agent_tool::regular_file::open_regular(
            real,
            agent_tool::regular_file::Links::Refuse,
        ) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok("absent".into()),
            Err(e) => return Err(e.to_string()),
        };
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        if self.bytes.saturating_add(len) > MAX_PINNED_BYTES {
            self.over_budget = true;
            return Err(format!(
                "more than {} MiB to pin (the trust budget)",
                MAX_PINNED_BYTES >> 20
            ));
        }
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        // Read no more than was counted: a file growing now is hashed as it
        // was, and changes the pin at the next start.
        let mut left = len;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            match file.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    left -= n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        self.bytes += len;
        Ok(hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }

    /// `path` as the user reads it: relative to the project when inside.
    fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// The words of a shell command line, or the first character that makes
/// the shell expand something (so its files are not fixed by the text):
/// `$` and backticks (unquoted or in double quotes), globs, `~`, braces and
/// backslashes (unquoted). Operators (`;|&()<>`) separate words.
///
/// Not `shlex::split`: it splits on whitespace only (`a;b>c` stays one
/// word, so the file after `>` would never be pinned), takes `$`, backticks
/// and globs as literal text where this must refuse them, and gives no
/// character to name in the refusal. Both checks depend on the quoting
/// state at each character, which is the whole of this loop.
pub(super) fn shell_words(line: &str) -> Result<Vec<String>, char> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some('\'') => {
                if c == '\'' {
                    quote = None;
                } else {
                    word.push(c);
                }
            }
            Some(_) => match c {
                '"' => quote = None,
                '$' | '`' | '\\' => return Err(c),
                _ => word.push(c),
            },
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '$' | '`' | '\\' | '*' | '?' | '[' | '{' | '~' => return Err(c),
                c if c.is_whitespace() || ";&|()<>".contains(c) => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}
