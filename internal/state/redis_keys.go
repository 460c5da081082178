package state

import (
	"strconv"
	"time"

	"switchyard/internal/affinity"
)

// keyspace names every key of the shared state under one prefix
// (state.redis_prefix; docs/scale-out.md#what-is-shared). The part of a
// name in braces is its Redis Cluster hash tag: the keys one script or
// step touches share it — the upstream's, the counter's or the session's —
// so they sit in one slot.
type keyspace string

// upstream is the key of one upstream's piece of state (brk, rpm, lease,
// queue, fair, …).
func (p keyspace) upstream(upstream, what string) string {
	return string(p) + "u:{" + upstream + "}:" + what
}

// counter is the key of a key's or team's counter (limits.CounterName):
// its rpm window or its lease set (conc).
func (p keyspace) counter(name, what string) string {
	return string(p) + "key:{" + name + "}:" + what
}

// bindingPrefix is what the keys of session's bindings start with.
func (p keyspace) bindingPrefix(session string) string {
	return string(p) + "aff:b:{" + sessionTag(session) + "}"
}

// binding is the key of k's binding: the session's hash tag (so that
// bind_set.lua's two keys share a slot), then the parts joined with a byte
// no configured name contains (keys and routes are validated; a session id
// is any string, so it goes last).
func (p keyspace) binding(k affinity.Key) string {
	return p.bindingPrefix(k.Session) + k.APIKey + "\x1f" + k.Route + "\x1f" + k.Session
}

// session is the key of the set of session's binding keys, in the slot of
// its bindings.
func (p keyspace) session(session string) string {
	return string(p) + "aff:s:{" + sessionTag(session) + "}" + session
}

// conversation is the key of response id's kept conversation.
func (p keyspace) conversation(id string) string { return string(p) + "conv:" + id }

// conversations is the key of the set of the response ids client key key
// kept.
func (p keyspace) conversations(key string) string { return string(p) + "convkey:" + key }

// pin is the key of ref's record: the upstream holding it.
func (p keyspace) pin(ref affinity.StateRef) string { return string(p) + "pin:" + string(ref) }

// spend returns the keys of scope's name's shared spend in the UTC day and
// month holding now.
func (p keyspace) spend(scope, name string, now time.Time) (day, month string) {
	now = now.UTC()
	y, m, d := now.Date()
	base := string(p) + "spend:" + scope + ":" + name
	return base + ":d:" + strconv.Itoa(y*10000+int(m)*100+d), base + ":m:" + strconv.Itoa(y*100+int(m))
}
