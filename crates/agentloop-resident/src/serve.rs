//! The resident itself: follows the run's journal, keeps the clean copy and the
//! surface's memory, answers one question per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::protocol::{Answer, Asked, FRESH_MS, Question, answer_bytes, sealed, seals, socket_of};
use agentloop_journal::{self as journal, RunState};
use agentloop_verify::clean_copy::{CleanCopy, Judge, KeptCopy};
use agentloop_verify::surface::Remembered;
use agentloop_workspace::RunDir;

/// Without a question for this long, the resident ends.
const IDLE: Duration = Duration::from_secs(3600);
/// How often it looks whether it is still wanted.
const TICK: u16 = 2000;
/// A question must arrive this soon after its connection, and its answer be taken
/// this soon.
const ASKED_WITHIN: Duration = Duration::from_secs(2);
/// A question is at most this long.
const QUESTION_BYTES: u64 = 1 << 20;
/// `resident.log` grows no further than this.
const LOG_BYTES: u64 = 1 << 20;

/// What the resident keeps.
struct Resident {
    run: RunDir,
    root: PathBuf,
    state: RunState,
    /// Where the journal's folded part ends.
    offset: u64,
    surface: Remembered,
    copy: Option<KeptCopy>,
    /// The one log line per question (`resident.log`, a view: never synced).
    log: Option<std::fs::File>,
}

/// Serves the run in `run_dir` of the project at `root` until it is no longer wanted.
/// `Err` says why it could not begin (another resident answers, the run cannot be
/// read, the socket cannot be made).
pub fn serve(run_dir: &Path, root: &Path) -> Result<(), String> {
    let run = RunDir {
        id: run_dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("a run's directory has a name")?
            .to_string(),
        path: run_dir.to_path_buf(),
    };
    let path = socket_of(run_dir).ok_or("the run's directory is too deep for a socket")?;
    if UnixStream::connect(&path).is_ok() {
        return Err("the run has a resident already".into());
    }
    let loaded = run.load_cached().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| e.to_string())?;
    let mine = std::fs::symlink_metadata(&path)
        .map(|m| (m.dev(), m.ino()))
        .map_err(|e| e.to_string())?;
    let mut r = Resident {
        surface: Remembered::new(run.surface_stamp_file()),
        offset: loaded.scan.valid_len,
        state: loaded.state,
        log: open_log(&run.path.join("resident.log")),
        run,
        root: root.to_path_buf(),
        copy: None,
    };
    let mut asked = Instant::now();
    loop {
        let ready = {
            let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::from(TICK)).unwrap_or(0) > 0
        };
        if ready && let Ok((stream, _)) = listener.accept() {
            match r.answer(stream) {
                Heard::Nothing => {}
                Heard::Asked => asked = Instant::now(),
                Heard::End => break,
            }
        }
        let still_mine = std::fs::symlink_metadata(&path).is_ok_and(|m| (m.dev(), m.ino()) == mine);
        if !still_mine || asked.elapsed() > IDLE || !r.wanted() {
            break;
        }
    }
    if std::fs::symlink_metadata(&path).is_ok_and(|m| (m.dev(), m.ino()) == mine) {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// What one connection brought.
enum Heard {
    /// Nothing sealed: dropped unanswered.
    Nothing,
    Asked,
    /// The run is over.
    End,
}

/// The log, a view for people: not followed through a link, not grown past its cap.
fn open_log(path: &Path) -> Option<std::fs::File> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file() || m.len() > LOG_BYTES) {
        return None;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
}

/// The first two lines of `stream` (a seal and a body), read within [`ASKED_WITHIN`]
/// in all and [`QUESTION_BYTES`] at most.
fn read_sealed(stream: &UnixStream) -> Option<(String, String)> {
    let began = Instant::now();
    let mut reader = BufReader::new(stream.take(QUESTION_BYTES));
    let mut lines = [String::new(), String::new()];
    for line in &mut lines {
        let left = ASKED_WITHIN.checked_sub(began.elapsed())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        reader.read_line(line).ok()?;
        if !line.ends_with('\n') {
            return None;
        }
        line.pop();
    }
    let [seal, body] = lines;
    Some((seal, body))
}

impl Resident {
    /// Reads one question and answers it, if a hook sealed it.
    fn answer(&mut self, stream: UnixStream) -> Heard {
        let Some((seal, body)) = read_sealed(&stream) else {
            return Heard::Nothing;
        };
        if !seals(body.as_bytes(), &seal) {
            return Heard::Nothing;
        }
        let Ok(asked) = serde_json::from_str::<Asked>(&body) else {
            return Heard::Nothing;
        };
        let end = matches!(asked.question, Question::End);
        let answer = if asked.run_dir != self.run.path || asked.root != self.root {
            Answer::Unsure {
                why: format!(
                    "this resident serves {} in {}",
                    self.run.path.display(),
                    self.root.display()
                ),
            }
        } else if agentloop_ground::clock::now_ms().abs_diff(asked.at_ms) > FRESH_MS {
            Answer::Unsure {
                why: "the question is stale".into(),
            }
        } else {
            self.decide(asked.question)
        };
        self.note(&answer);
        if let Ok(bytes) = serde_json::to_vec(&answer)
            && let Some(answer_seal) = agentloop_journal::seal(&answer_bytes(&seal, &bytes))
        {
            let _ = stream.set_write_timeout(Some(ASKED_WITHIN));
            let _ = (&stream).write_all(&sealed(&answer_seal, &bytes));
        }
        if end { Heard::End } else { Heard::Asked }
    }

    fn decide(&mut self, question: Question) -> Answer {
        let unsure = |why: &str| Answer::Unsure { why: why.into() };
        match question {
            Question::Forget => {
                if let Some(c) = self.copy.as_mut() {
                    c.forget();
                }
                Answer::Done
            }
            Question::End => Answer::Done,
            Question::Surface { seq, now } => {
                if let Err(why) = self.follow(seq) {
                    return unsure(&why);
                }
                let Some(base) = self.state.baseline.as_ref() else {
                    return unsure("the run has no baseline");
                };
                let project = self.state.project(&self.root);
                match self
                    .surface
                    .check(&self.root, base, &project, Some(&now), true)
                {
                    Ok(c) => Answer::Surface {
                        changes: c.changes,
                        warning: c.warning,
                    },
                    Err(why) => unsure(&why),
                }
            }
            Question::Copy { seq, now, tasks } => {
                if let Err(why) = self.follow(seq) {
                    return unsure(&why);
                }
                if !self.state.settings.clean_copy {
                    return unsure("the run has no clean copy");
                }
                if self.copy.is_none() {
                    self.copy = CleanCopy::for_run(&self.root, &self.run.id).map(KeptCopy::new);
                }
                let Some(copy) = self.copy.as_mut() else {
                    return unsure("no place for the clean copy");
                };
                let s = &self.state;
                let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
                let admission = match agentloop_verify::clean_copy::admission(s, &self.root, &tasks)
                {
                    Ok(a) => a,
                    Err(why) => return unsure(&why),
                };
                let judge = Judge {
                    overlay: s.baseline.as_ref(),
                    admission: admission.as_ref(),
                };
                match copy.refresh_judged(Some(&now), judge, &s.settings.carry) {
                    Ok(r) => Answer::Copy {
                        dir: copy.copy().dir.clone(),
                        warning: r.warning(),
                        left_out: r.left_out,
                        admitted: r.admitted,
                    },
                    Err(why) => {
                        copy.forget();
                        unsure(&why)
                    }
                }
            }
        }
    }

    /// Folds what was appended since; `Err` unless the journal then ends at `seq`, as
    /// the asking hook's does.
    fn follow(&mut self, seq: u64) -> Result<(), String> {
        self.catch_up()?;
        if self.state.last_seq != seq {
            return Err(format!(
                "the journal ends at {} here, at {seq} for the hook",
                self.state.last_seq
            ));
        }
        Ok(())
    }

    /// Folds the whole records appended since the last look.
    fn catch_up(&mut self) -> Result<(), String> {
        let mut records = Vec::new();
        let scan = journal::scan(
            &self.run.journal(),
            self.offset,
            self.state.last_seq + 1,
            |r| records.push(r),
        )
        .map_err(|e| e.to_string())?;
        if scan.torn_tail.is_some() {
            return Err("the journal ends in a torn line".into());
        }
        for r in &records {
            self.state.apply(r);
        }
        self.offset = scan.valid_len;
        Ok(())
    }

    /// The run is still there and unfinished.
    fn wanted(&mut self) -> bool {
        if !self.run.journal().exists() || !self.root.exists() {
            return false;
        }
        let _ = self.catch_up();
        !self.state.is_finished()
    }

    /// One line per answer, for whoever wants to see what the resident did.
    fn note(&mut self, answer: &Answer) {
        let line = match answer {
            Answer::Surface { changes, .. } => format!("surface: {} changed\n", changes.len()),
            Answer::Copy { .. } => {
                use agentloop_verify::clean_copy::Way;
                match self.copy.as_ref().and_then(|c| c.last) {
                    Some(Way::Full) => "copy: refreshed by git\n".into(),
                    Some(Way::Kept) => "copy: kept in step without git\n".into(),
                    None => "copy: not made\n".into(),
                }
            }
            Answer::Done => "done\n".into(),
            Answer::Unsure { why } => format!("unsure: {why}\n"),
        };
        if let Some(f) = self.log.as_mut() {
            if f.metadata().is_ok_and(|m| m.len() > LOG_BYTES) {
                self.log = None;
            } else {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}
