package spool

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/robot-agent/robot-agent/clock"
)

// The store is chosen by measurement (docs/benchmarks.md, "Control spool"):
// this file runs the same workloads against the append-only log (Log) and
// against bbolt, the well-kept embedded B+tree store, with the same
// durability contract — a put returns once the event is on the device, and
// settles are written lazily (with the next commit or within a second).

type candidate interface {
	put(id string, data []byte) error // durable on return
	settle(id string)
	close()
}

type logCand struct{ l *Log }

func (c logCand) put(id string, data []byte) error {
	t, err := c.l.Append(id, data)
	if err != nil {
		return err
	}
	return c.l.Sync(t)
}
func (c logCand) settle(id string) { c.l.Settle(id) }
func (c logCand) close()           { c.l.Close() }

// boltCand keeps events in one bucket keyed by id. Concurrent puts share a
// transaction (db.Batch, the bbolt group commit); settles are deleted in the
// next put's transaction or by a flush at most a second later — the same
// lazy policy as the log.
type boltCand struct {
	db   *bolt.DB
	mu   sync.Mutex
	dead []string
	stop chan struct{}
	done chan struct{}
}

var bucket = []byte("events")

func openBolt(dir string) (*boltCand, error) {
	db, err := bolt.Open(filepath.Join(dir, "spool.db"), 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, err
	}
	db.MaxBatchDelay = time.Millisecond
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		return nil, err
	}
	c := &boltCand{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.db.Update(func(tx *bolt.Tx) error { return c.deleteDead(tx) })
			}
		}
	}()
	return c, nil
}

func (c *boltCand) deleteDead(tx *bolt.Tx) error {
	c.mu.Lock()
	dead := c.dead
	c.dead = nil
	c.mu.Unlock()
	b := tx.Bucket(bucket)
	for _, id := range dead {
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
	}
	return nil
}

func (c *boltCand) put(id string, data []byte) error {
	return c.db.Batch(func(tx *bolt.Tx) error {
		if err := c.deleteDead(tx); err != nil {
			return err
		}
		return tx.Bucket(bucket).Put([]byte(id), data)
	})
}
func (c *boltCand) settle(id string) { c.mu.Lock(); c.dead = append(c.dead, id); c.mu.Unlock() }
func (c *boltCand) close()           { close(c.stop); <-c.done; c.db.Close() }

// ioWrite returns this process's write_bytes (bytes sent to the block
// device) and wchar (bytes passed to write calls) from /proc/self/io.
func ioWrite(b *testing.B) (dev, syscalls int64) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "write_bytes":
			dev = n
		case "wchar":
			syscalls = n
		}
	}
	return dev, syscalls
}

// blockWritten returns the bytes written to the block device named by
// $SPOOL_BENCH_DEV (e.g. loop0: a loop-mounted ext4 that only the benchmark
// uses, set up by scripts/bench.d/spool.sh as root), journal included, or
// -1 when it is not set.
func blockWritten(b *testing.B) int64 {
	dev := os.Getenv("SPOOL_BENCH_DEV")
	if dev == "" {
		return -1
	}
	syscall.Sync()
	data, err := os.ReadFile("/sys/block/" + dev + "/stat")
	if err != nil {
		b.Fatalf("SPOOL_BENCH_DEV: %v", err)
	}
	f := strings.Fields(string(data))
	n, _ := strconv.ParseInt(f[6], 10, 64)
	return n * 512
}

// benchDir is where the stores live: $SPOOL_BENCH_DIR or a temp dir.
func benchDir(b *testing.B) string {
	if d := os.Getenv("SPOOL_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// event is a typical reliable control message (~150 bytes).
func event(id string, i int) []byte {
	return fmt.Appendf(nil, `{"type":"state","event_id":%q,"ts":%d,"name":"imu","value":{"ax":0.012,"ay":-0.021,"az":9.807,"gx":0.1,"gy":0.0,"gz":-0.3}}`, id, 1_000_000+i*20_000)
}

// workload raises n events from producers goroutines, paced at rate
// events/s in total (0: as fast as possible); each event is settled ackAfter
// later (the gateway's ack). It reports events/s, p50/p99 time to durable
// and device bytes per event.
func workload(b *testing.B, open func(dir string) candidate, producers, n, rate int, ackAfter time.Duration) {
	for b.Loop() {
		dir := benchDir(b)
		c := open(dir)
		blk0 := blockWritten(b) // after open: the steady state, not the file's creation
		lat := make([]time.Duration, n)
		dev0, w0 := ioWrite(b)
		start := time.Now()
		var wg sync.WaitGroup
		acks := make(chan string, n)
		ackDone := make(chan struct{})
		go func() {
			defer close(ackDone)
			for id := range acks {
				c.settle(id)
			}
		}()
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := p; i < n; i += producers {
					if rate > 0 {
						if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
							time.Sleep(d)
						}
					}
					id := fmt.Sprintf("3f9c1a2b4c5d-%d", i+1)
					t0 := time.Now()
					if err := c.put(id, event(id, i)); err != nil {
						b.Error(err)
						return
					}
					lat[i] = time.Since(t0)
					if ackAfter > 0 {
						time.AfterFunc(ackAfter, func() { acks <- id })
					} else {
						acks <- id
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		time.Sleep(ackAfter + 10*time.Millisecond)
		close(acks)
		<-ackDone
		c.close() // settles written
		dev1, w1 := ioWrite(b)
		if blk0 >= 0 {
			blk := float64(blockWritten(b)-blk0) / float64(n)
			b.ReportMetric(blk, "blk-B/event")
			if rate > 0 {
				b.ReportMetric(blk*float64(rate)*86400/(1<<20), "blk-MiB/day")
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(dev1-dev0)/float64(n), "dev-B/event")
		b.ReportMetric(float64(w1-w0)/float64(n), "write-B/event")
		if rate > 0 {
			b.ReportMetric(float64(dev1-dev0)/float64(n)*float64(rate)*86400/(1<<20), "dev-MiB/day")
		}
	}
}

func BenchmarkSpool(b *testing.B) {
	cands := []struct {
		name string
		open func(dir string) candidate
	}{
		{"log", func(dir string) candidate {
			l, err := Open(Config{Dir: dir}, clock.NewReal(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			return logCand{l}
		}},
		{"bbolt", func(dir string) candidate {
			c, err := openBolt(dir)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
	}
	for _, c := range cands {
		// Burst: 8 producers as fast as the store allows (group commit).
		b.Run(c.name+"/burst-8", func(b *testing.B) { workload(b, c.open, 8, 4000, 0, 0) })
		// One producer, no pacing: the cost of one durable commit.
		b.Run(c.name+"/serial", func(b *testing.B) { workload(b, c.open, 1, 500, 0, 0) })
		// make run's rate (~11 events/s) and a busy robot's (100/s), acked
		// 50 ms later: bytes to the device per event and per day.
		b.Run(c.name+"/paced-11", func(b *testing.B) { workload(b, c.open, 1, 110, 11, 50*time.Millisecond) })
		b.Run(c.name+"/paced-100", func(b *testing.B) { workload(b, c.open, 4, 1000, 100, 50*time.Millisecond) })
	}
}
