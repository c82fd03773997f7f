//! Adversarial cases: each brings a kept copy and a fully refreshed one to the same
//! project and compares them (see `Pair::check`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Pair, write};
use crate::clean_copy::Way;
use agentloop_exec::testing::git;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

// Failed before the fix: the kept way writes the project's bytes; git normalises them
// by the project's attributes (`text`, `eol`, `ident`) when it adds and checks out.
#[test]
fn adv_attributes_that_change_what_git_writes() {
    let mut p = Pair::new(|root| {
        write(
            &root.join(".gitattributes"),
            "*.txt text eol=crlf\n*.py ident\n",
        );
        write(&root.join("src/n.txt"), "one\n");
    });
    write(&p.root.join("src/n.txt"), "one\ntwo\n");
    write(&p.root.join("src/a.py"), "# $Id$\na\n");
    p.check("files under text/eol/ident attributes");
}

// Failed before the fix: a directory holding only ignored files is left by `git clean
// -fd` and noted as the checks' own (not watched inside); a file git does not ignore
// written into it later stays in the kept copy, where the full way cleans it.
#[test]
fn adv_unignored_file_in_a_directory_of_ignored_ones() {
    let mut p = Pair::new(|_| {});
    p.in_copies(|d| write(&d.join("newdir/x.pyc"), "cache\n"));
    p.check("a new directory of ignored files");
    p.in_copies(|d| write(&d.join("newdir/conftest.py"), "planted\n"));
    p.check("a file not ignored in the checks' directory");
}

// Failed before the fix: as above, with a negated rule (`cache/*` then `!cache/keep.py`).
#[test]
fn adv_negated_rule_in_a_directory_of_ignored_ones() {
    let mut p = Pair::new(|root| {
        write(&root.join(".gitignore"), "*.pyc\ncache/*\n!cache/keep.py\n");
    });
    p.in_copies(|d| write(&d.join("cache/x"), "cache\n"));
    p.check("an ignored cache");
    p.in_copies(|d| write(&d.join("cache/keep.py"), "planted\n"));
    p.check("a re-included file in the cache");
}

// Failed before the fix: an event whose name is not UTF-8 is skipped; the file a check
// made stays.
#[test]
fn adv_check_makes_a_non_utf8_name() {
    use std::os::unix::ffi::OsStrExt;
    let mut p = Pair::new(|_| {});
    let name = std::ffi::OsStr::from_bytes(b"src/\xff.py");
    p.in_copies(|d| std::fs::write(d.join(name), "planted\n").unwrap());
    p.check("a check's file with a name not UTF-8");
}

// Failed before the fix: a check renames a tree file to a name not UTF-8: the tree file
// is put back, the renamed one stays.
#[test]
fn adv_check_renames_a_file_to_a_non_utf8_name() {
    use std::os::unix::ffi::OsStrExt;
    let mut p = Pair::new(|_| {});
    let name = std::ffi::OsStr::from_bytes(b"src/\xfe");
    p.in_copies(|d| std::fs::rename(d.join("src/a.py"), d.join(name)).unwrap());
    p.check("a tree file renamed to a name not UTF-8");
}

// Failed before the fix: git status's path is read lossily: the agent's new file with a
// name not UTF-8 becomes a path that is not there, removed from the kept copy (it never
// was).
#[test]
fn adv_agent_makes_a_non_utf8_name() {
    use std::os::unix::ffi::OsStrExt;
    let mut p = Pair::new(|_| {});
    let name = std::ffi::OsStr::from_bytes(b"src/\xff.py");
    std::fs::write(p.root.join(name), "new\n").unwrap();
    p.check("the agent's file with a name not UTF-8");
}

// Failed before the fix: `git ls-files` output is trimmed: the first path (sorted)
// loses its leading space and becomes another tree file's name; the file with the space
// is taken for the checks' own, and what a check writes to it is kept.
#[test]
fn adv_leading_space_in_the_first_tracked_name() {
    let mut p = Pair::new(|root| write(&root.join(" README.md"), "spaced\n"));
    p.in_copies(|d| write(&d.join(" README.md"), "planted\n"));
    p.check("a check wrote the tracked file whose name starts with a space");
}

// Failed before the fix: `git rm --cached` of a tracked file the rules ignore: status
// lists it (deleted from the index) with its content, the kept way writes it; the full
// way's tree lacks it.
#[test]
fn adv_rm_cached_of_an_ignored_tracked_file() {
    let mut p = Pair::new(|root| write(&root.join("build/keep.o"), "kept\n"));
    // `add -A` does not add an ignored file: track it by force.
    git(&p.root, &["add", "-f", "build/keep.o"]);
    git(&p.root, &["commit", "-qm", "force"]);
    p.check("a tracked ignored file");
    git(&p.root, &["rm", "-q", "--cached", "build/keep.o"]);
    p.check("the ignored file untracked");
}

// Failed before the fix: a file marked assume-unchanged keeps its index blob in the
// full way; the kept way, when a check touched it, writes the project's edited file.
#[test]
fn adv_assume_unchanged_file_touched_by_a_check() {
    let mut p = Pair::new(|_| {});
    git(&p.root, &["update-index", "--assume-unchanged", "src/a.py"]);
    write(&p.root.join("src/a.py"), "edited, hidden from status\n");
    p.check("an assume-unchanged edit");
    p.in_copies(|d| write(&d.join("src/a.py"), "a check wrote this\n"));
    p.check("an assume-unchanged file a check wrote");
}

// Failed before the fix: the same with skip-worktree.
#[test]
fn adv_skip_worktree_file_touched_by_a_check() {
    let mut p = Pair::new(|_| {});
    git(&p.root, &["update-index", "--skip-worktree", "src/b.py"]);
    write(&p.root.join("src/b.py"), "edited, hidden from status\n");
    p.check("a skip-worktree edit");
    p.in_copies(|d| write(&d.join("src/b.py"), "a check wrote this\n"));
    p.check("a skip-worktree file a check wrote");
}

// Failed before the fix: with `core.fileMode=false` git keeps the index's mode; the
// kept way takes the execute bit from the file.
#[test]
fn adv_file_mode_off() {
    let mut p = Pair::new(|_| {});
    git(&p.root, &["config", "core.fileMode", "false"]);
    chmod(&p.root.join("src/a.py"), 0o755);
    write(&p.root.join("src/a.py"), "edited\n");
    p.check("an edited file made executable, modes ignored");
}

// Failed before the fix: `core.autocrlf=true`: git writes CRLF on checkout.
#[test]
fn adv_autocrlf() {
    let mut p = Pair::new(|_| {});
    git(&p.root, &["config", "core.autocrlf", "true"]);
    p.kept.forget();
    p.check("autocrlf set");
    write(&p.root.join("src/a.py"), "edited\nagain\n");
    p.check("an edited file under autocrlf");
}

// Failed before the fix: at "the directory replaced by a file" (see
// `adv_directory_replaced_by_a_file_in_the_project`).
#[test]
fn adv_file_becomes_directory_and_back() {
    let mut p = Pair::new(|_| {});
    std::fs::remove_file(p.root.join("src/b.py")).unwrap();
    write(&p.root.join("src/b.py/x.py"), "x\n");
    p.check("a file replaced by a directory");
    std::fs::remove_dir_all(p.root.join("src/b.py")).unwrap();
    write(&p.root.join("src/b.py"), "b again\n");
    p.check("the directory replaced by a file");
    std::fs::remove_dir_all(p.root.join("src/pkg")).unwrap();
    write(&p.root.join("src/pkg"), "pkg file\n");
    p.check("a tree directory replaced by a file");
}

#[test]
fn adv_head_moves_every_way() {
    let mut p = Pair::new(|_| {});
    write(&p.root.join("src/a.py"), "one\n");
    write(&p.root.join("src/new.py"), "new\n");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "one"]);
    p.check("a commit");
    write(&p.root.join("src/a.py"), "amended\n");
    std::fs::remove_file(p.root.join("src/new.py")).unwrap();
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-q", "--amend", "-m", "amended"]);
    p.check("an amend");
    git(&p.root, &["reset", "-q", "--hard", "HEAD~1"]);
    p.check("a hard reset");
    git(&p.root, &["checkout", "-q", "-b", "other"]);
    write(&p.root.join("src/pkg/c.py"), "other\n");
    git(&p.root, &["commit", "-qam", "other"]);
    git(&p.root, &["checkout", "-q", "-"]);
    p.check("back from another branch");
    git(&p.root, &["checkout", "-q", "other"]);
    p.check("on the other branch");
    git(&p.root, &["reset", "-q", "--soft", "HEAD~1"]);
    p.check("a soft reset");
    git(&p.root, &["reset", "-q", "--mixed"]);
    write(&p.root.join("src/pkg/c.py"), "c\n");
    p.check("a mixed reset, the file put back as it was");
}

#[test]
fn adv_index_changes() {
    let mut p = Pair::new(|_| {});
    write(&p.root.join("src/a.py"), "staged\n");
    git(&p.root, &["add", "src/a.py"]);
    write(&p.root.join("src/a.py"), "a\n");
    p.check("staged, then the file put back");
    git(&p.root, &["rm", "-q", "--cached", "src/b.py"]);
    p.check("untracked in the index, still there");
    git(&p.root, &["add", "src/b.py"]);
    p.check("added again");
    git(&p.root, &["update-index", "--chmod=+x", "src/pkg/c.py"]);
    p.check("an index-only mode change");
}

#[test]
fn adv_unusual_names() {
    let mut p = Pair::new(|_| {});
    for n in [
        "src/with space.py",
        "src/new\nline.py",
        "src/-dash.py",
        "src/*.py",
        "src/[ab].py",
        "src/tab\t.py",
    ] {
        write(&p.root.join(n), "odd\n");
    }
    p.check("odd names added");
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "odd"]);
    p.check("odd names committed");
    for n in [
        "src/with space.py",
        "src/new\nline.py",
        "src/-dash.py",
        "src/*.py",
        "src/[ab].py",
    ] {
        write(&p.root.join(n), "odd again\n");
    }
    p.check("odd names edited");
    for n in [
        "src/with space.py",
        "src/new\nline.py",
        "src/-dash.py",
        "src/*.py",
        "src/[ab].py",
    ] {
        write(&p.root.join(n), "odd\n");
    }
    p.check("odd names put back (dirty, then clean: asked of HEAD)");
    p.in_copies(|d| {
        for n in [
            "src/with space.py",
            "src/new\nline.py",
            "src/-dash.py",
            "src/*.py",
        ] {
            write(&d.join(n), "planted\n");
        }
    });
    p.check("odd names written by a check");
}

#[test]
fn adv_check_moves_and_links_in_the_copy() {
    let mut p = Pair::new(|_| {});
    p.in_copies(|d| write(&d.join("src/m.pyc"), "cache\n"));
    p.check("an ignored file");
    // A tree file moved over the ignored one, the ignored one over another tree file.
    p.in_copies(|d| {
        std::fs::rename(d.join("src/a.py"), d.join("src/m.pyc")).unwrap();
        write(&d.join("src/x.pyc"), "planted\n");
    });
    p.check("a tree file moved over an ignored one");
    p.in_copies(|d| {
        std::fs::rename(d.join("src/m.pyc"), d.join("src/b.py")).unwrap();
    });
    p.check("an ignored file moved over a tree file");
    // A tree file replaced by a hard link to an ignored one and by a symlink.
    p.in_copies(|d| {
        std::fs::remove_file(d.join("src/pkg/c.py")).unwrap();
        std::fs::hard_link(d.join("src/x.pyc"), d.join("src/pkg/c.py")).unwrap();
        std::fs::remove_file(d.join("README.md")).unwrap();
        std::os::unix::fs::symlink("src/x.pyc", d.join("README.md")).unwrap();
    });
    p.check("tree files replaced by links");
    // The ignored file (once hard-linked to a tree file) written.
    p.in_copies(|d| write(&d.join("src/x.pyc"), "through the ignored name\n"));
    p.check("written through the ignored name");
    // chmod, touch, delete and recreate.
    p.in_copies(|d| {
        chmod(&d.join("src/a.py"), 0o755);
        std::fs::remove_file(d.join("src/b.py")).unwrap();
        write(&d.join("src/b.py"), "recreated\n");
    });
    p.check("chmod; deleted and recreated");
    // A directory of the tree moved away and another put in its place.
    p.in_copies(|d| {
        std::fs::rename(d.join("src/pkg"), d.join("cache")).unwrap();
        write(&d.join("src/pkg/c.py"), "planted\n");
    });
    p.check("a tree directory replaced");
    // An empty directory.
    p.in_copies(|d| std::fs::create_dir(d.join("src/empty")).unwrap());
    p.check("an empty directory");
}

#[test]
fn adv_overlay_file_in_the_copy() {
    let mut p = Pair::new(|_| {});
    p.in_copies(|d| {
        std::fs::rename(d.join("tests/test_a.py"), d.join("tests/moved.pyc")).unwrap();
        write(&d.join("tests/test_a.py"), "def test_a(): pass\n");
    });
    p.check("the surface file moved away and rewritten the same");
    p.in_copies(|d| chmod(&d.join("tests/test_a.py"), 0o755));
    p.check("the surface file made executable");
    write(&p.root.join("tests/test_a.py"), "def test_a(): assert 0\n");
    p.check("the agent's surface edit");
    std::fs::remove_file(p.root.join("tests/test_a.py")).unwrap();
    p.check("the agent's surface delete");
    std::fs::create_dir(p.root.join("tests/test_a.py")).unwrap();
    write(&p.root.join("tests/test_a.py/x.py"), "dir now\n");
    let _ = p.refresh();
}

#[test]
fn adv_nested_gitignore_and_exclude() {
    let mut p = Pair::new(|_| {});
    p.in_copies(|d| write(&d.join("src/m.log"), "log\n"));
    p.check("a log (not ignored)");
    // The project's exclude file ignores it now: the full way keeps it from here on.
    let exclude = p.root.join(".git/info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("*.log\n");
    write(&exclude, &text);
    p.in_copies(|d| write(&d.join("src/m.log"), "log\n"));
    p.check("a log, ignored by the exclude file");
    std::fs::write(&exclude, "").unwrap();
    p.check("the exclude file emptied");
    write(&p.root.join("src/pkg/.gitignore"), "*.txt\n");
    p.in_copies(|d| write(&d.join("src/pkg/n.txt"), "t\n"));
    p.check("a nested .gitignore");
    std::fs::remove_file(p.root.join("src/pkg/.gitignore")).unwrap();
    p.check("the nested .gitignore gone");
}

#[test]
fn adv_queue_overflow_hides_a_plant() {
    let mut p = Pair::new(|_| {});
    // Two ignored files the checks made, kept from then on.
    p.in_copies(|d| {
        write(&d.join("src/m.pyc"), "cache\n");
        write(&d.join("src/n.pyc"), "cache\n");
    });
    p.check("a cache");
    write(&p.root.join("src/b.py"), "edited\n");
    assert_eq!(p.check("an edit"), Way::Kept);
    // Many events on a watched directory (more than the kernel's queue holds, 16,384
    // by default: a time set on the two files in turn, one call each and never
    // merged), then the plant.
    p.in_copies(|d| {
        let files = ["src/m.pyc", "src/n.pyc"].map(|f| std::fs::File::open(d.join(f)).unwrap());
        let t = std::time::SystemTime::UNIX_EPOCH;
        for i in 0..20_000u64 {
            let at = t + std::time::Duration::from_secs(i);
            files[(i % 2) as usize].set_modified(at).unwrap();
        }
    });
    p.in_copies(|d| write(&d.join("src/a.py"), "planted\n"));
    p.check("a plant after the queue overflowed");
}

// Holds: a carried (ignored) link replaced by a check with a file stays in both.
#[test]
fn adv_carried_link_replaced() {
    let mut p = Pair::with_carry(
        |root| write(&root.join("vendor.txt"), "vendor\n"),
        &["data"],
    );
    write(&p.root.join("data"), "carried\n");
    // Ignored so it is not the agent's; the copy gets the link.
    let mut gi = std::fs::read_to_string(p.root.join(".gitignore")).unwrap();
    gi.push_str("/data\n");
    write(&p.root.join(".gitignore"), &gi);
    git(&p.root, &["commit", "-qam", "ignore data"]);
    p.check("a carried path");
    p.in_copies(|d| {
        std::fs::remove_file(d.join("data")).unwrap();
        write(&d.join("data"), "planted\n");
    });
    p.check("the carried link replaced by a file (ignored)");
}

// A limit, documented (exec/clean_copy/kept.rs): the short way writes the files, not
// the copy's own commit and index, so the first check that runs git in the copy after
// a short refresh sees them as changes; from the next refresh on, every one is full.
#[test]
fn git_in_the_copy_sees_the_old_commit_once_then_every_refresh_is_full() {
    let mut p = Pair::new(|_| {});
    write(&p.root.join("src/a.py"), "edited\n");
    assert_eq!(p.check("an edit"), Way::Kept);
    let status = |d: &Path| agentloop_exec::git::run(d, &["status", "--porcelain"]).unwrap();
    let [k, f] = p.dirs();
    assert_eq!(status(&f), "");
    assert_eq!(status(&k), "M src/a.py", "the limit as documented");
    for n in 0..2 {
        write(&p.root.join("src/a.py"), &format!("edited {n}\n"));
        assert_eq!(p.check("after git ran in the copy"), Way::Full);
        let [k, f] = p.dirs();
        assert_eq!(status(&k), status(&f));
    }
}

// Failed before the fix: a tree directory that the project now has as a file: the path
// is taken for a directory of the tree and skipped; the directory's file goes and the
// file never comes.
#[test]
fn adv_directory_replaced_by_a_file_in_the_project() {
    let mut p = Pair::new(|_| {});
    std::fs::remove_dir_all(p.root.join("src/pkg")).unwrap();
    write(&p.root.join("src/pkg"), "pkg is a file now\n");
    p.check("a tree directory replaced by a file");
}

// Found by the stop-66 attack: a check's code pointed the copy's `.git` at a git
// directory of its making in the copy (the real objects borrowed, a filter of its
// own), which agentloop's git, outside any sandbox, read at the next refresh. The
// copy's link is checked before its git runs; anything else and the copy is made
// again from nothing, the filter never run.
#[test]
fn adv_check_points_the_copys_git_link_elsewhere() {
    let mut p = Pair::new(|_| {});
    let mark = p.root.parent().unwrap().join("FILTER-RAN");
    let mark_text = mark.display().to_string();
    p.in_copies(|d| {
        let link = std::fs::read_to_string(d.join(".git")).unwrap();
        let real = d.join(link.trim().strip_prefix("gitdir:").unwrap().trim());
        let common = real.join(std::fs::read_to_string(real.join("commondir")).unwrap().trim());
        let fake = d.join("fake");
        for sub in ["info", "refs", "objects/info"] {
            std::fs::create_dir_all(fake.join(sub)).unwrap();
        }
        write(
            &fake.join("objects/info/alternates"),
            &format!("{}\n", common.join("objects").display()),
        );
        std::fs::copy(real.join("HEAD"), fake.join("HEAD")).unwrap();
        write(
            &fake.join("config"),
            &format!(
                "[core]\n\trepositoryformatversion = 0\n[filter \"e\\x\"]\n\tsmudge = touch {mark_text} && cat\n\tclean = touch {mark_text} && cat\n"
            ),
        );
        write(&fake.join("info/attributes"), "* filter=ex\n");
        write(&d.join(".git"), &format!("gitdir: {}\n", fake.display()));
    });
    write(&p.root.join("src/a.py"), "a changed\n");
    p.check("a copy whose .git names a repository of the check's making");
    assert!(!mark.exists(), "the check's filter ran");
    for d in p.dirs() {
        let link = std::fs::read_to_string(d.join(".git")).unwrap();
        assert!(link.contains("/worktrees/"), "{link}");
        assert!(!d.join("fake").exists());
    }
}

// Found by the stop-66 attack: a check wrote an ignore file that ignores itself and a
// `conftest.py` beside it; both stayed, as ignored files the checks made, and the
// conftest faked a later task's tests. An ignore file the checks made goes, and what
// it kept with it.
#[test]
fn adv_check_plants_an_ignore_file_that_keeps_its_plant() {
    let mut p = Pair::new(|_| {});
    p.in_copies(|d| {
        write(&d.join("tests/.gitignore"), ".gitignore\nconftest.py\n");
        write(&d.join("tests/conftest.py"), "planted\n");
    });
    write(&p.root.join("src/a.py"), "a changed\n");
    p.check("a self-ignoring ignore file and its plant");
    for d in p.dirs() {
        assert!(!d.join("tests/conftest.py").exists(), "{}", d.display());
        assert!(!d.join("tests/.gitignore").exists(), "{}", d.display());
    }
}
