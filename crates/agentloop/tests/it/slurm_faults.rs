//! The Slurm executor when the cluster itself fails: a controller that restarts with
//! its state lost gives the ids of the run's jobs to other jobs.

use std::process::Command;
use std::time::Duration;

use crate::slurm::{
    ONE, SLOW_FIRST, cluster_in, first_job_started, job_state, jobs, killed_at_work, project_on,
    slurm,
};

/// A job submitted by someone else on the cluster `conf`: its id.
fn someone_elses_job(conf: &str) -> String {
    let out = Command::new("sbatch")
        .args([
            "--parsable",
            "--job-name=someone-elses",
            "--output=/dev/null",
            "--wrap=sleep 300",
        ])
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_job_id_the_controller_gives_again_after_losing_its_state_is_not_taken_for_the_runs_job() {
    // A cluster of its own: its controller restarts from no state.
    let name = "slurm-state-lost";
    let conf = fresh(name);
    let (p, _remote, conf) = project_on(conf, ONE, 1, SLOW_FIRST);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    let (_, ours) = jobs(&p).remove(0);
    // The controller and the node start again with their saved state gone:
    // ids start again from the first, and someone else's job gets the id of ours.
    let conf2 = fresh(name);
    assert_eq!(conf2, conf);
    let theirs = loop {
        let id = someone_elses_job(&conf);
        let (n, o) = (id.parse::<u64>().unwrap(), ours.parse::<u64>().unwrap());
        assert!(n <= o, "the controller kept its ids: {id} after {ours}");
        if n == o {
            break id;
        }
    };
    // The run takes the job it followed as lost, redoes the task and ends: it neither
    // follows nor cancels the other job, which still runs.
    let t = std::time::Instant::now();
    let st = loop {
        if let Some(st) = driver.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(90) {
            let seen = crate::support::processes_below(driver.id());
            let _ = driver.kill();
            panic!(
                "the driver did not exit within 90 s:\n{seen}\nlog: {}\nsqueue: {}",
                p.run(&["log"]).stdout,
                slurm(
                    &conf,
                    "squeue",
                    &["--states=all", "-h", "-O", "JobID,State,Reason,Name:60"]
                ),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(st.code(), Some(0), "{}", p.run(&["log"]).stdout);
    assert!(
        crate::support::journal_has(&p, "its id is another job's now, `someone-elses`"),
        "{}",
        p.run(&["log"]).stdout
    );
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(job_state(&conf, &theirs), "RUNNING");
    assert_eq!(
        slurm(&conf, "squeue", &["-h", "-j", &theirs, "-O", "Name"]),
        "someone-elses"
    );
    assert_eq!(jobs(&p).len(), 2);
    let _ = slurm(&conf, "scancel", &[&theirs]);
    cluster_in(name, "stop");
}

/// The cluster in the target directory's `name`, started again as after a crash that
/// lost everything: no job step left, no saved state, job ids from the first again.
fn fresh(name: &str) -> String {
    cluster_in(name, "reset")
}

#[test]
fn a_job_whose_id_a_killed_driver_never_wrote_down_is_found_by_its_name_and_cancelled() {
    let (p, _remote, conf) = crate::slurm::project(ONE, 1, SLOW_FIRST);
    killed_at_work(&p);
    // As if the driver had died between `sbatch` and writing the id: only the job's
    // name, written before it was submitted, is there.
    let (dir, id) = jobs(&p).remove(0);
    std::fs::remove_file(dir.join("slurm.job")).unwrap();
    let name = std::fs::read_to_string(dir.join("slurm.name")).unwrap();
    assert!(name.trim().starts_with("agentloop-"), "{name}");
    assert_eq!(
        slurm(&conf, "squeue", &["-h", "-j", &id, "-O", "Name:100"]),
        name.trim()
    );
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(job_state(&conf, &id).starts_with("CANCELLED"));
    assert_eq!(p.status()["status"], "completed");
}
