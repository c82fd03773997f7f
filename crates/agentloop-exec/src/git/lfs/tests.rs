use super::*;
use crate::testing::{git, lfs_pointer, lfs_store};

#[test]
fn a_pointer_is_read_as_git_lfs_reads_one() {
    let (oid, text) = lfs_pointer(b"content");
    assert_eq!(
        Pointer::parse(text.as_bytes()),
        Some(Pointer {
            oid: oid.clone(),
            size: 7,
            extensions: false
        })
    );
    // As Git LFS 3.3 reads one too (each case held to `git lfs smudge` by the stop-80
    // attacks).
    let padded = format!("{text}{}", " ".repeat(1024 - text.len()));
    let read = [
        text.replace("git-lfs.github.com", "hawser.github.com"),
        text.replace(
            "https://git-lfs.github.com/spec/v1",
            "http://git-media.io/v/2",
        ),
        text.replace('\n', "\r\n"),
        text.trim_end().to_string(),
        format!("  {text}\n\n"),
        format!("{text}\u{a0}\u{b}"),
        padded.clone(),
        text.replace("\noid", "\n\noid"),
        text.replace("size 7", "size +7"),
    ];
    for r in read {
        assert_eq!(
            Pointer::parse(r.as_bytes()).map(|p| (p.size, p.extensions)),
            Some((7, false)),
            "{r:?}"
        );
    }
    let with_extension = text.replace("\noid", &format!("\next-0-foo sha256:{oid}\noid"));
    assert!(Pointer::parse(with_extension.as_bytes()).is_some_and(|p| p.extensions));
    assert_eq!(
        Pointer::parse(text.replace("size 7", "size -0").as_bytes()).map(|p| p.size),
        Some(0)
    );
    let not = [
        text.replace(&oid, &oid.to_uppercase()),
        text.replace(&oid, &oid[..63]),
        text.replace("size 7", "size -7"),
        text.replace("size 7", "size "),
        text.replace("size 7", "size 7x"),
        text.replace("v1", "v2"),
        text.replace("oid sha256:", "oid sha1:"),
        format!("{text}ext-0-foo sha256:{oid}\n"),
        format!("{text}size 8\n"),
        format!("{text}x-custom.key anything\n"),
        format!("{text}Key value\n"),
        format!("version https://git-lfs.github.com/spec/v1\nsize 7\noid sha256:{oid}\n"),
        format!("{padded} "),
        String::new(),
    ];
    for n in not {
        assert_eq!(Pointer::parse(n.as_bytes()), None, "{n:?}");
    }
}

/// A repository whose `.dat` files Git LFS tracks, committed as pointers (as `git lfs`
/// leaves them in the object store): the repository's directory.
fn lfs_repository(root: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q"]);
    std::fs::write(
        root.join(".gitattributes"),
        "*.dat filter=lfs diff=lfs merge=lfs -text\n",
    )
    .unwrap();
    for (path, text) in files {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "pointers"]);
}

#[test]
fn each_pointer_gets_the_content_that_hashes_to_it_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("p");
    let (a_oid, a) = lfs_pointer(b"the fixture\n");
    let (b_oid, b) = lfs_pointer(b"honest bytes\n");
    let (_, c) = lfs_pointer(b"never fetched\n");
    let (e_oid, e) = lfs_pointer(b"a fifo\n");
    let (x_oid, x) = lfs_pointer(b"#!/bin/sh\nexit 0\n");
    let (t_oid, t) = lfs_pointer(b"not a dat\n");
    lfs_repository(
        &root,
        &[
            ("data/a.dat", &a),
            ("b.dat", &b),
            ("c.dat", &c),
            ("e.dat", &e),
            ("run.dat", &x),
            ("t.txt", &t),
        ],
    );
    let common = root.join(".git");
    lfs_store(&common, &a_oid, b"the fixture\n");
    // Of the pointer's size, but not its content: an agent's plant.
    lfs_store(&common, &b_oid, b"forged bytes\n");
    let fifo = common
        .join("lfs/objects")
        .join(&e_oid[..2])
        .join(&e_oid[2..4]);
    std::fs::create_dir_all(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.join(&e_oid))
        .status()
        .unwrap();
    assert!(made.success());
    lfs_store(&common, &x_oid, b"#!/bin/sh\nexit 0\n");
    lfs_store(&common, &t_oid, b"not a dat\n");
    std::fs::set_permissions(root.join("run.dat"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let filled = fill(&root, &common);

    assert_eq!(filled.filled, ["data/a.dat", "run.dat"]);
    assert_eq!(filled.missing, ["b.dat", "c.dat", "e.dat"]);
    assert_eq!(
        std::fs::read(root.join("data/a.dat")).unwrap(),
        b"the fixture\n"
    );
    assert_eq!(std::fs::read_to_string(root.join("b.dat")).unwrap(), b);
    assert_eq!(std::fs::read_to_string(root.join("c.dat")).unwrap(), c);
    assert_eq!(std::fs::read_to_string(root.join("e.dat")).unwrap(), e);
    let mode = std::fs::metadata(root.join("run.dat"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755, "the file's mode stays");
    assert_eq!(
        std::fs::read_to_string(root.join("t.txt")).unwrap(),
        t,
        "a pointer whose attributes do not say `filter=lfs` is a file like any other"
    );
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("agentloop-lfs"))
        .collect();
    assert!(
        left.is_empty(),
        "no file of the copy's is left behind: {left:?}"
    );
}

#[test]
fn a_link_named_like_a_tracked_file_is_not_written_through() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("p");
    let (oid, a) = lfs_pointer(b"content\n");
    lfs_repository(&root, &[("a.dat", &a)]);
    lfs_store(&root.join(".git"), &oid, b"content\n");
    let outside = d.path().join("outside.dat");
    std::fs::write(&outside, &a).unwrap();
    std::fs::remove_file(root.join("a.dat")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("a.dat")).unwrap();
    let filled = fill(&root, &root.join(".git"));
    assert_eq!(filled, Filled::default());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), a);
}

#[test]
fn a_repository_without_a_store_is_left_as_it_is() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("p");
    let (_, a) = lfs_pointer(b"content\n");
    lfs_repository(&root, &[("a.dat", &a)]);
    assert_eq!(fill(&root, &root.join(".git")), Filled::default());
    assert_eq!(std::fs::read_to_string(root.join("a.dat")).unwrap(), a);
}

#[test]
fn clean_keeps_the_content_and_gives_its_pointer_but_never_writes_through_a_link() {
    let d = tempfile::tempdir().unwrap();
    let common = d.path().join("git");
    let store = common.join("lfs/objects");
    std::fs::create_dir_all(&common).unwrap();
    let (oid, pointer) = lfs_pointer(b"the agent's file\n");
    let mut out = Vec::new();
    clean(&store, &b"the agent's file\n"[..], &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), pointer);
    let kept = store.join(&oid[..2]).join(&oid[2..4]).join(&oid);
    assert_eq!(std::fs::read(&kept).unwrap(), b"the agent's file\n");
    let mut again = Vec::new();
    clean(&store, pointer.as_bytes(), &mut again).unwrap();
    assert_eq!(again, pointer.as_bytes(), "a pointer stays a pointer");
    let mut empty = Vec::new();
    clean(&store, &b""[..], &mut empty).unwrap();
    assert!(empty.is_empty(), "an empty file stays empty");

    // A link where the object's directory would be, or where the temporary file goes.
    let (oid, _) = lfs_pointer(b"a cron job\n");
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.join(&oid[..2])).unwrap();
    assert!(clean(&store, &b"a cron job\n"[..], &mut Vec::new()).is_err());
    std::fs::remove_dir_all(common.join("lfs/tmp")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, common.join("lfs/tmp")).unwrap();
    assert!(clean(&store, &b"anything\n"[..], &mut Vec::new()).is_err());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn smudge_gives_only_content_that_hashes_to_the_pointer() {
    let d = tempfile::tempdir().unwrap();
    let common = d.path().join("git");
    let store = common.join("lfs/objects");
    let (oid, pointer) = lfs_pointer(b"right\n");
    let mut out = Vec::new();
    smudge(&store, pointer.as_bytes(), &mut out).unwrap();
    assert_eq!(out, pointer.as_bytes(), "nothing stored: the pointer");
    lfs_store(&common, &oid, b"wrong\n");
    assert!(
        smudge(&store, pointer.as_bytes(), &mut Vec::new()).is_err(),
        "content that does not hash to the pointer is an error, found as it is read"
    );
    let elsewhere = d.path().join("elsewhere");
    std::fs::write(&elsewhere, b"right\n").unwrap();
    let at = store.join(&oid[..2]).join(&oid[2..4]).join(&oid);
    std::fs::remove_file(&at).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &at).unwrap();
    let mut out = Vec::new();
    smudge(&store, pointer.as_bytes(), &mut out).unwrap();
    assert_eq!(out, pointer.as_bytes(), "a link in the store is no content");
    std::fs::remove_file(&at).unwrap();
    let sparse = std::fs::File::create(&at).unwrap();
    sparse.set_len(6).unwrap();
    let mut out = Vec::new();
    smudge(&store, pointer.as_bytes(), &mut out).unwrap();
    assert_eq!(out, pointer.as_bytes(), "a file with holes is no content");
    std::fs::remove_file(&at).unwrap();
    lfs_store(&common, &oid, b"right\n");
    let mut out = Vec::new();
    smudge(&store, pointer.as_bytes(), &mut out).unwrap();
    assert_eq!(out, b"right\n");
    let (_, empty) = lfs_pointer(b"");
    let mut out = Vec::new();
    smudge(&store, empty.as_bytes(), &mut out).unwrap();
    assert!(out.is_empty(), "an empty file's pointer needs no store");
    let any = pointer.replace("size 6", "size 0");
    let mut out = Vec::new();
    smudge(&store, any.as_bytes(), &mut out).unwrap();
    assert!(
        out.is_empty(),
        "size 0 is empty whatever the oid, as Git LFS has it"
    );
    let big = vec![b'x'; 5000];
    let mut out = Vec::new();
    smudge(&store, &big[..], &mut out).unwrap();
    assert_eq!(out, big, "what is not a pointer passes as it came");
}
