//! A hosted program's turns after its first, in a session that stays open
//! (`Taking::stays`): where the program is in its turns, and what words a
//! person says do there.
//!
//! The rule, one for every kind and surface (`rein say`, the page, a line
//! typed when attached — they all arrive through the session's inbox):
//! - a turn runs and hears words (Claude Code's stdin, Codex's
//!   `turn/steer`): they steer it, heard at its next step;
//! - a turn runs and hears none (an ACP prompt, a Codex turn not open
//!   yet): they are queued, and start the next turn when it ends;
//! - no turn runs and the program stays: they start its next turn;
//! - a program that takes one request: they are recorded, not heard.
//!
//! Words that arrive together make one turn's request, in the order said.
//! Between turns the program waits at most its idle limit; then the run
//! ends as it finished. The route chosen is what the session host tells a
//! viewer who typed the line ([`Turning`]).
//!
//! Not here: taking the inbox and steering (`heard`), the loop
//! (`driver.rs`), how each program takes a turn (its adapter).

use std::time::Duration;

use tokio::time::Instant;

use crate::session::Turning;

/// Words said in a run's whole life that wait for its next turn, at most;
/// more are recorded and not heard.
pub const MAX_QUEUED: usize = 64;

/// What to do with words a person said.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Steer the running turn with them.
    Steer(Vec<String>),
    /// They were queued for the next turn (how many wait now).
    Queued(usize),
    /// Start the next turn with this request.
    Start(String),
    /// Nothing hears them (recorded only).
    Unheard(Vec<String>),
}

/// Where a run's program is in its turns.
#[derive(Debug)]
pub(crate) struct Turns {
    /// How long it stays between turns; `None`: it takes one request.
    stays: Option<Duration>,
    /// Since when no turn runs (it waits for the next), if so.
    waiting: Option<Instant>,
    /// Words for the next turn, said while one ran that hears none.
    queued: Vec<String>,
    /// The last closed turn's reply, recorded as it when the next starts.
    reply: Option<String>,
    /// Words steered into the turn that runs (a program may take the last
    /// of them as a turn of its own once that one closed).
    steered: Vec<String>,
}

impl Turns {
    /// A run's turns: it stays `stays` between them when its program
    /// `takes_turns`, else it takes one request.
    pub(crate) fn new(stays: Option<Duration>, takes_turns: bool) -> Turns {
        Turns {
            stays: stays.filter(|_| takes_turns),
            waiting: None,
            queued: Vec::new(),
            reply: None,
            steered: Vec::new(),
        }
    }

    /// Whether the program stays for another turn after one.
    pub(crate) fn stays(&self) -> bool {
        self.stays.is_some()
    }

    /// Whether no turn runs and the program waits for one.
    pub(crate) fn waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// What a line said now does, for the session host, when the running
    /// turn `steers` (hears words) or not and the last turn is `over`.
    pub(crate) fn turning(&self, steers: bool, over: bool) -> Turning {
        if self.waiting.is_some() {
            Turning::Waits
        } else if over && !self.stays() {
            Turning::Deaf
        } else if steers {
            Turning::Steers
        } else if self.stays() {
            Turning::Queues
        } else {
            Turning::Deaf
        }
    }

    /// When the program waiting has been idle its limit: never while a
    /// turn runs.
    pub(crate) async fn idle(&self) {
        match (self.waiting, self.stays) {
            (Some(since), Some(limit)) => tokio::time::sleep_until(since + limit).await,
            _ => std::future::pending().await,
        }
    }

    /// The idle limit, for saying why the run ended.
    pub(crate) fn limit(&self) -> Option<Duration> {
        self.stays
    }

    /// Words a person said (recorded already; at least one), when the
    /// running turn `steers` or not: what to do with them.
    pub(crate) fn hear(&mut self, words: Vec<String>, steers: bool) -> Route {
        if self.waiting.is_some() {
            return Route::Start(words.join("\n\n"));
        }
        if steers {
            if self.steered.len() + words.len() <= MAX_QUEUED {
                self.steered.extend(words.iter().cloned());
            }
            return Route::Steer(words);
        }
        if !self.stays() || self.queued.len() + words.len() > MAX_QUEUED {
            return Route::Unheard(words);
        }
        self.queued.extend(words);
        Route::Queued(self.queued.len())
    }

    /// A turn closed with `reply`: the next turn's request when words were
    /// queued for it; otherwise the program waits from now.
    pub(crate) fn closed(&mut self, reply: Option<String>) -> Option<String> {
        self.reply = reply;
        if self.queued.is_empty() {
            self.waiting = Some(Instant::now());
            return None;
        }
        Some(std::mem::take(&mut self.queued).join("\n\n"))
    }

    /// The next turn starts: the reply of the turn before, to record.
    pub(crate) fn started(&mut self) -> Option<String> {
        self.waiting = None;
        self.steered.clear();
        self.reply.take()
    }

    /// The program went on while it waited, by itself (words steered late
    /// into its last turn, which it took as a turn of their own): that
    /// turn's request, and the reply of the turn before, to record.
    pub(crate) fn went_on(&mut self) -> (String, Option<String>) {
        let prompt = if self.steered.is_empty() {
            "(the program went on by itself)".to_owned()
        } else {
            self.steered.join("\n\n")
        };
        (prompt, self.started())
    }

    /// The run takes no more turns (it is ending): no more waiting.
    pub(crate) fn end(&mut self) {
        self.stays = None;
        self.waiting = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_run_that_takes_one_request_hears_words_only_while_it_steers() {
        let mut turns = Turns::new(None, true);
        assert!(!turns.stays());
        assert_eq!(turns.hear(words(&["a"]), true), Route::Steer(words(&["a"])));
        assert_eq!(
            turns.hear(words(&["b"]), false),
            Route::Unheard(words(&["b"]))
        );
        assert_eq!(turns.turning(true, false), Turning::Steers);
        assert_eq!(turns.turning(false, false), Turning::Deaf);
        assert_eq!(turns.turning(true, true), Turning::Deaf);
        // A program that takes no turns never stays, whatever was asked.
        assert!(!Turns::new(Some(Duration::from_secs(5)), false).stays());
    }

    #[test]
    fn words_queue_while_a_turn_hears_none_and_start_the_next_in_order() {
        let mut turns = Turns::new(Some(Duration::from_secs(60)), true);
        assert_eq!(turns.turning(false, false), Turning::Queues);
        assert_eq!(turns.hear(words(&["one"]), false), Route::Queued(1));
        assert_eq!(
            turns.hear(words(&["two", "three"]), false),
            Route::Queued(3)
        );
        assert_eq!(
            turns.closed(Some("first".into())),
            Some("one\n\ntwo\n\nthree".to_owned())
        );
        assert!(!turns.waiting());
        assert_eq!(turns.started(), Some("first".to_owned()));
        // Nothing queued: the program waits, and a line starts its turn.
        assert_eq!(turns.closed(Some("second".into())), None);
        assert!(turns.waiting());
        assert_eq!(turns.turning(true, true), Turning::Waits);
        assert_eq!(
            turns.hear(words(&["go", "on"]), true),
            Route::Start("go\n\non".into())
        );
        assert_eq!(turns.started(), Some("second".to_owned()));
        assert_eq!(turns.turning(true, false), Turning::Steers);
        // Words steered late, taken by the program as a turn of its own.
        assert_eq!(
            turns.hear(words(&["late"]), true),
            Route::Steer(words(&["late"]))
        );
        assert_eq!(turns.closed(Some("third".into())), None);
        assert_eq!(
            turns.went_on(),
            ("late".to_owned(), Some("third".to_owned()))
        );
        turns.end();
        assert!(!turns.stays() && !turns.waiting());
        assert_eq!(turns.turning(true, true), Turning::Deaf);
    }

    #[test]
    fn the_queue_is_bounded() {
        let mut turns = Turns::new(Some(Duration::from_secs(60)), true);
        for n in 1..=MAX_QUEUED {
            assert_eq!(turns.hear(words(&["w"]), false), Route::Queued(n));
        }
        assert_eq!(
            turns.hear(words(&["x"]), false),
            Route::Unheard(words(&["x"]))
        );
    }

    #[tokio::test]
    async fn a_waiting_program_is_idle_after_its_limit_and_never_while_a_turn_runs() {
        let limit = Duration::from_millis(50);
        let mut turns = Turns::new(Some(limit), true);
        let running = tokio::time::timeout(limit * 4, turns.idle()).await;
        assert!(running.is_err(), "idle while a turn ran");
        turns.closed(None);
        let waited = Instant::now();
        turns.idle().await;
        assert!(waited.elapsed() >= limit);
    }
}
