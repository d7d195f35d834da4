package sdnotify_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/sdnotify"
)

// The agent wires systemd notification like this: heartbeats for each main
// loop, READY once they run, pings only while they all beat.
func Example() {
	n, err := sdnotify.FromEnv(os.Getenv) // no-op outside systemd
	if err != nil {
		fmt.Println(err)
		return
	}
	timeout, err := sdnotify.WatchdogTimeout(os.Getenv, os.Getpid())
	if err != nil {
		fmt.Println(err)
		return
	}
	wd := sdnotify.NewWatchdog(clock.NewReal(), n, timeout, nil, nil)
	playback := wd.Register("playback", 2*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go func() { // the playback loop
		for ctx.Err() == nil {
			playback.Beat()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_ = n.Ready()
	_ = wd.Run(ctx)
	_ = n.Stopping()
	fmt.Println("stalled loops:", len(wd.Stalled()))
	// Output: stalled loops: 0
}
