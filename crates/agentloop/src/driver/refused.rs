//! A verification that passed and proves nothing: refused, with the reason the
//! agent is told.

/// A verification that ran in the project because its clean copy could not be made:
/// not passed (what the agent left lying in its tree decided it).
pub(crate) fn unclean_refused(result: &mut agentloop_journal::VerifyFinished, why: &str) {
    if result.passed {
        result.passed = false;
        result.fingerprint = Some(agentloop_ground::failure::fingerprint("copy", "unclean"));
        result.digest = Some(format!(
            "The checks could not run on a clean copy of your work: {why}. They ran in the working tree, where what passes proves nothing. This is not your work's fault; a person should look at the run's log."
        ));
    }
}

/// A verification with held-out checks and no clean copy to run them on: not passed
/// (the agent would see them in its own tree).
pub(crate) fn held_out_refused(result: &mut agentloop_journal::VerifyFinished) {
    if result.passed {
        result.passed = false;
        result.fingerprint = Some(agentloop_ground::failure::fingerprint("holdout", "no copy"));
        result.digest = Some(
            "The held-out checks could not run: agentloop could not make the clean copy they run on. This is not your work's fault; a person should look at the run's log."
                .into(),
        );
    }
}
