package uplink

// dedup remembers the event ids of reliable gateway messages already handed
// to the application, for one gateway session. Gateway event ids are only
// unique within a session (5.3): a restarted gateway, or a new session on
// the same one, may reuse them, so a new (not resumed) session starts with
// an empty set. A resumed session keeps it: the gateway re-sends its
// unacknowledged messages there, and those must not be acted on twice.
//
// # Concurrency
//
// Only the read pump calls seen; the session goroutine calls begin before
// the read pump starts.
type dedup struct {
	limit   int
	session string
	ids     map[string]struct{}
	order   []string
}

func newDedup(limit int) *dedup {
	if limit <= 0 {
		limit = 4096
	}
	return &dedup{limit: limit, ids: make(map[string]struct{})}
}

// begin scopes the set to session. resumed sessions with the same id keep
// what was seen; anything else starts afresh.
func (d *dedup) begin(session string, resumed bool) {
	if resumed && session == d.session {
		return
	}
	d.session = session
	clear(d.ids)
	d.order = d.order[:0]
}

// seen records id and reports whether it was already recorded in this
// session (among the last limit ids).
func (d *dedup) seen(id string) bool {
	if _, ok := d.ids[id]; ok {
		return true
	}
	d.ids[id] = struct{}{}
	d.order = append(d.order, id)
	if len(d.order) > d.limit {
		delete(d.ids, d.order[0])
		d.order[0] = ""
		d.order = d.order[1:]
	}
	return false
}
