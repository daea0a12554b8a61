# How many WAL pages one commit of 100 events writes, across 100 sessions
# and within one, on the SQLite store's `log` table and `log_by_session` index
# (docs/BENCHMARKS.md, "What stops the store at 100 busy sessions").
# Run: python3 crates/rein-sessions/benches/wal_pages.py [one]
import sqlite3, os, json
import tempfile
p=os.path.join(tempfile.mkdtemp(), 'walp.db')
for f in [p, p+'-wal', p+'-shm']:
    if os.path.exists(f): os.remove(f)
c=sqlite3.connect(p, isolation_level=None)
c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')
c.execute('CREATE TABLE sessions (id TEXT PRIMARY KEY, key INTEGER UNIQUE, head_seq INTEGER, head_turn TEXT, control TEXT)')
c.execute('CREATE TABLE log (n INTEGER PRIMARY KEY, session INTEGER NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER, agent_path TEXT, kind TEXT, version INTEGER, data TEXT)')
c.execute('CREATE UNIQUE INDEX log_by_session ON log (session, seq)')
data=json.dumps({"content":"x"*150})
import sys
S=100
ONE = len(sys.argv) > 1 and sys.argv[1] == 'one'
for k in range(1,S+1):
    c.execute('INSERT INTO sessions VALUES (?,?,?,?,?)',(f'{k:036d}',k,0,None,'{}'))
def commit_round(seq):
    c.execute('BEGIN IMMEDIATE')
    for k in range(1,S+1):
        c.execute('INSERT INTO log (session,seq,at_ms,agent_path,kind,version,data) VALUES (?,?,?,?,?,?,?)',((1 if ONE else k),(seq*1000+k if ONE else seq),0,'main','tool.result',1,data))
        c.execute('UPDATE sessions SET head_seq=? WHERE key=?',(seq,k))
    c.execute('COMMIT')
for seq in range(1,300): commit_round(seq)
c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
for trial in range(3):
    before=c.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone()
    commit_round(300+trial)
    after=c.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone()
    print('frames in one commit of', S, 'events of', 'one session' if ONE else f'{S} sessions', ':', after[1]-before[1] if after[1]>=before[1] else after[1], 'page size', c.execute('PRAGMA page_size').fetchone()[0])
    c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
