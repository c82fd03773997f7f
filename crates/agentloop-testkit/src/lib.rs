//! Test stand-ins for remote services: mock model APIs on 127.0.0.1 that the real agent
//! CLIs talk to in tests (see [`mock`]), mock forges and trackers — GitHub and GitLab
//! backed by bare repositories, Linear's GraphQL API ([`forge`]) —, a Kubernetes API server
//! with one node whose pods are local processes ([`kubernetes`]), and the efficiency scenarios that compare
//! agentloop's policy with the loops people use today.

pub mod efficiency;
pub mod forge;
pub mod kubernetes;
pub mod mock;
pub mod sim;

pub use forge::github::MockGitHub;
pub use forge::gitlab::MockGitLab;
pub use forge::linear::MockLinear;
pub use kubernetes::MockKubernetes;
pub use mock::{Api, MockServer, Recorded, Scenario, Step, Tokens};
