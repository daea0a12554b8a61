-- The store's notification channels are named with a key only a role that
-- may read this table knows. Any role of the cluster may LISTEN to any
-- channel: under a fixed name, every role would hear which sessions move
-- and when, with no grant on rein's tables.
CREATE TABLE channel_key (
    only_row  BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    key       TEXT NOT NULL
);
INSERT INTO channel_key (key) VALUES (replace(gen_random_uuid()::text, '-', ''));
