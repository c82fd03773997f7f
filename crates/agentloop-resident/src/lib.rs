//! A hook-mode run's resident: a process of agentloop's own that lives between Stop
//! hooks and remembers what one hook process cannot — the run's clean copy kept in
//! step (`exec::clean_copy::kept`, its inotify watch on the copy) and the surface's
//! stamp with each surface file watched (`exec::surface::Remembered`). A Stop hook is
//! a new process each turn; without the resident every verification takes the full
//! way (ten git processes for the copy, every surface file's status read).
//!
//! The first Stop hook that needs it starts it (`agentloop __agentloop_resident RUN
//! ROOT`, in a session of its own, no standard streams) and verifies the full way
//! itself; later hooks ask it through a Unix socket in the run's directory, one
//! question per connection, and take the full way whenever it does not answer. It
//! answers only for the journal as the asking hook has it (the sequence number of its
//! last record): it follows the journal itself and folds every record, so both judge
//! by the same state, or it says it is unsure.
//!
//! Who may ask, and what may answer. Each question is sealed with the journal's key
//! (`journal::seal`) over its body, which names the run's directory, the project and
//! the moment it was asked; the resident acts on nothing else — a question an agent
//! wrote (a snapshot of its making, a `forget` in the middle of a check) is dropped
//! unanswered — and answers only for its own run and project. Each answer is sealed
//! over the question's seal and the answer. The socket's other end (`SO_PEERCRED`)
//! must moreover run agentloop's own program (`/proc/PID/exe`) as the asking user,
//! started with the same variables that decide how agentloop and git run (`PATH`,
//! `HOME`, `LD_*`, `GIT_*`, `XDG_*`, `AGENTLOOP_*`), and the copy it names must be the
//! run's. Anything else is not asked again: a resident that failed this way is ended
//! (by its pid, once it was found to be agentloop's own), its socket removed and a
//! resident of the hook's own started. Without a journal key there is no resident.
//!
//! It ends when the run is finished or gone, when its socket is no longer its own,
//! when a hook says the run is over, and after an hour without a sealed question.

mod ask;
mod protocol;
mod serve;

pub use ask::{Copied, Resident};
pub use protocol::{RESIDENT_ARG, socket_of};
pub use serve::serve;
