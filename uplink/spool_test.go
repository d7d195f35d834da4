package uplink

import (
	"slices"
	"testing"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
	"github.com/robot-agent/robot-agent/spool"
)

// Events left unsettled by one process (a crash) come back in the next,
// with their original ids (the old boot's), ahead of the new boot's events;
// settled ones do not.
func TestOutboxSpoolRestoresAheadOfNewEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) Spool
	}{
		{"memory", func() func(*testing.T) Spool { m := spool.NewMemory(); return func(*testing.T) Spool { return m } }()},
		{"file", func() func(*testing.T) Spool {
			dir := ""
			return func(t *testing.T) Spool {
				if dir == "" {
					dir = t.TempDir()
				}
				l, err := spool.Open(spool.Config{Dir: dir}, clock.NewReal(), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake()
			o1 := NewOutbox("bootA", 100, clk, metrics.NewRegistry())
			if err := o1.SetSpool(tc.open(t)); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 4; i++ {
				if err := o1.Emit(state("s", i)); err != nil {
					t.Fatal(err)
				}
			}
			ids(t, o1) // sent, not acked...
			o1.Ack("bootA-2")
			o1.Settle("bootA-3", "bad_message")
			if c, ok := o1.spool.(interface{ Close() error }); ok {
				c.Close()
			}
			// ...crash; the next boot has another boot id.
			reg := metrics.NewRegistry()
			o2 := NewOutbox("bootB", 100, clk, reg)
			if err := o2.SetSpool(tc.open(t)); err != nil {
				t.Fatal(err)
			}
			if err := o2.Emit(state("s", 5)); err != nil {
				t.Fatal(err)
			}
			got := ids(t, o2)
			if want := []string{"bootA-1", "bootA-4", "bootB-1"}; !slices.Equal(got, want) {
				t.Fatalf("after restart sent %v, want %v", got, want)
			}
			if reg.Value("robot_agent_control_restored_total") != 2 {
				t.Fatal("restored events not counted")
			}
		})
	}
}
