//! One append inside an open transaction: the events checked, numbered and
//! inserted, the turn tree and the control record projected in the same
//! transaction. The caller holds the lease check and commits.

use super::*;

/// Append inside an open transaction; the caller commits.
pub(super) async fn append_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    session_id: &str,
    events: Vec<NewEvent>,
) -> Result<Vec<StoredEvent>, AgentError> {
    let row = sqlx::query("SELECT head_seq, head_turn, control FROM sessions WHERE id = ?")
        .bind(session_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_error)?
        .ok_or_else(|| not_found(session_id))?;
    let head_seq = to_u64(row.try_get("head_seq").map_err(db_error)?);
    let mut head_turn: Option<String> = row.try_get("head_turn").map_err(db_error)?;
    let control_text: String = row.try_get("control").map_err(db_error)?;
    let mut control: ControlRecord = serde_json::from_str(&control_text).unwrap_or_default();

    // Which session each referenced turn belongs to.
    let mut owners: HashMap<String, String> = HashMap::new();
    for new in &events {
        let refs: Vec<&str> = match &new.event {
            Event::TurnStarted {
                turn_id, parent, ..
            } => {
                let mut v = vec![turn_id.as_str()];
                v.extend(parent.as_deref());
                v
            }
            Event::BranchCreated { from_turn } => from_turn.as_deref().into_iter().collect(),
            _ => Vec::new(),
        };
        for turn in refs {
            let owner: Option<String> =
                sqlx::query_scalar("SELECT session_id FROM turns WHERE id = ?")
                    .bind(turn)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(db_error)?;
            if let Some(owner) = owner {
                owners.insert(turn.to_owned(), owner);
            }
        }
    }
    check_append(session_id, &events, &|turn| owners.get(turn).cloned())?;

    let at_ms = now_ms();
    let mut stored = Vec::with_capacity(events.len());
    for (i, new) in events.into_iter().enumerate() {
        let event = StoredEvent {
            session_id: session_id.to_owned(),
            seq: head_seq + 1 + i as u64,
            at_ms,
            agent_path: new.agent_path,
            event: new.event,
        };
        let data = serde_json::to_string(&event.event.data()).map_err(|err| {
            AgentError::new(codes::INTERNAL, format!("cannot write an event: {err}"))
        })?;
        sqlx::query(
            "INSERT INTO events (session_id, seq, at_ms, agent_path, kind, version, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(session_id)
        .bind(to_i64(event.seq))
        .bind(at_ms)
        .bind(&event.agent_path)
        .bind(event.event.kind())
        .bind(i64::from(event.event.version()))
        .bind(data)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
        match apply(&event, &mut head_turn, &mut control) {
            Some(TurnChange::Started(turn)) => {
                sqlx::query(
                    "INSERT INTO turns (id, session_id, parent, prompt, started_seq) VALUES (?, ?, ?, ?, ?)",
                )
                .bind(&turn.id)
                .bind(session_id)
                .bind(&turn.parent)
                .bind(&turn.prompt)
                .bind(to_i64(turn.started_seq))
                .execute(&mut **tx)
                .await
                .map_err(db_error)?;
            }
            Some(TurnChange::Finished { id, seq, outcome }) => {
                sqlx::query("UPDATE turns SET finished_seq = ?, outcome = ? WHERE id = ? AND session_id = ?")
                    .bind(to_i64(seq))
                    .bind(outcome)
                    .bind(id)
                    .bind(session_id)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_error)?;
            }
            None => {}
        }
        stored.push(event);
    }
    let control_text = serde_json::to_string(&control).map_err(|err| {
        AgentError::new(
            codes::INTERNAL,
            format!("cannot write the control record: {err}"),
        )
    })?;
    sqlx::query("UPDATE sessions SET head_seq = ?, head_turn = ?, control = ? WHERE id = ?")
        .bind(to_i64(head_seq + stored.len() as u64))
        .bind(head_turn)
        .bind(control_text)
        .bind(session_id)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    Ok(stored)
}
