package duplex

// preludeGate holds the pump's utterances while the start-up sound plays
// and until the first reply starts (LeadMS after it), as the agent holds
// the mic while it plays one (warmup.Sink). Gated is called from the
// pump's Run goroutine, which also drives src's Read.
type preludeGate struct {
	src   *benchSource
	until int // mic samples
}

func (g preludeGate) Gated() bool { return g.src.pos < g.until }
