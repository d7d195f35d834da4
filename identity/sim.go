package identity

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/robot-agent/robot-agent/clock"
)

// SimStep is one simulated person in view: UID is observed every Every
// from At for For.
type SimStep struct {
	At, For    time.Duration
	UID, Kind  string
	Confidence float64
	// Raw, when set, is sent once at At instead of observations (to show
	// how a bad line is refused).
	Raw string
}

// SimRecogniser plays a script of people coming into view, as the robot's
// recogniser process would report them.
type SimRecogniser struct {
	Steps []SimStep
	Loop  time.Duration // repeat period (0: play once)
	Every time.Duration // observation interval while in view (default 500ms)
}

// DefaultSim is the simulator's script (60 s loop): alice in view for 7 s,
// bob for 6 s, one malformed line, alice again for 5 s. With absence 20s
// (the sim config) alice is greeted on both appearances, bob once; with
// the 5 min default absence alice's second appearance is not a greet.
func DefaultSim() *SimRecogniser {
	return &SimRecogniser{
		Loop:  60 * time.Second,
		Every: 500 * time.Millisecond,
		Steps: []SimStep{
			{At: 3 * time.Second, For: 7 * time.Second, UID: "alice", Kind: "face", Confidence: 0.93},
			{At: 18 * time.Second, For: 6 * time.Second, UID: "bob", Kind: "face", Confidence: 0.88},
			{At: 30 * time.Second, Raw: `{"uid":"","kind":"face"}`},
			{At: 40 * time.Second, For: 5 * time.Second, UID: "alice", Kind: "voiceprint", Confidence: 0.81},
		},
	}
}

// Run plays the script on clk, handing each line to send, until ctx is done
// (or the script ends, without Loop). send errors (refused lines) are
// expected for Raw steps and ignored.
func (r *SimRecogniser) Run(ctx context.Context, clk clock.Clock, send func(line []byte) error) error {
	every := r.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	wait := func(d time.Duration) bool { return clock.SleepContext(ctx, clk, d) }
	for {
		start := clk.Mono()
		for _, st := range r.Steps {
			if !wait(st.At - (clk.Mono() - start)) {
				return ctx.Err()
			}
			if st.Raw != "" {
				_ = send([]byte(st.Raw))
				continue
			}
			line := []byte(`{"uid":` + strconv.Quote(st.UID) + `,"kind":` + strconv.Quote(st.Kind) +
				`,"confidence":` + strconv.FormatFloat(st.Confidence, 'f', 2, 64) + `}`)
			for seen := time.Duration(0); seen < st.For; seen += every {
				_ = send(line)
				if !wait(every) {
					return ctx.Err()
				}
			}
		}
		if r.Loop <= 0 {
			return nil
		}
		if !wait(r.Loop - (clk.Mono() - start)) {
			return ctx.Err()
		}
	}
}

// DialUnix connects to a recogniser socket and returns a send function
// that writes one line and reads its reply, as a real recogniser would.
// Close the returned conn when done.
func DialUnix(path string) (send func(line []byte) error, c net.Conn, err error) {
	c, err = net.Dial("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("identity: dial %s: %w", path, err)
	}
	br := bufio.NewReader(c)
	send = func(line []byte) error {
		if _, err := c.Write(append(append([]byte(nil), line...), '\n')); err != nil {
			return err
		}
		reply, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if reply != "{\"ok\":true}\n" {
			return fmt.Errorf("identity: refused: %s", reply)
		}
		return nil
	}
	return send, c, nil
}
