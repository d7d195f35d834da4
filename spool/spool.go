// Package spool is the robot's durable store of control events: an
// append-only log file with a CRC per record, group commit, and a size cap.
//
// The uplink's outbox appends every reliable robot → gateway event before
// counting it as raised (Append, then Sync: on return the event is on the
// device), and records its settlement (ack, or error with ref) lazily. When
// the agent starts again after a crash or power loss, Load hands back the
// events that were never settled, in their original order, with their
// original event ids, and they are delivered ahead of new ones.
//
// # Durability and wear
//
// Sync commits with a write into preallocated space and fdatasync: the
// file is grown in PreallocBytes steps of real zeros, so an ordinary commit
// changes no metadata and costs the device one data page, not a journal
// transaction as well (docs/benchmarks.md measures both on ext4). A zero
// length word where a record would start is the end of the log (the
// preallocated tail). Concurrent callers share one commit
// (group commit): the first waiter writes everything queued, optionally
// after GroupDelay to gather more. Settle records are not synced by
// themselves; they ride on the next commit or are written at most
// SettleDelay later. Losing one in a crash only means the event is sent
// again (the gateway de-duplicates by event id, docs/protocol.md 5.3). When
// every event is settled and the file is over CompactBytes, it is truncated;
// when it is over CompactBytes and mostly dead, the live records are
// rewritten to a new file that atomically replaces it.
//
// # Damage
//
// Open reads the whole file. A record that is torn (the tail of a write cut
// by power loss) or corrupt (bad length, kind or CRC) is copied to a side
// file, spool.log.corrupt-<unix-ns>, counted and logged; decoding resumes
// at the next valid record, so the rest is delivered. The file is then
// rewritten without the damage.
//
// # Cap
//
// At most MaxBytes of unsettled events are held. Append beyond that
// returns ErrFull (counted in robot_agent_spool_full_total and logged):
// the new event is refused at its source, nothing stored is dropped — the
// same policy as the outbox's message limit.
//
// # Concurrency
//
// Every method may be called from any goroutine.
package spool

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/robot-agent/robot-agent/clock"
	"github.com/robot-agent/robot-agent/metrics"
)

// Errors.
var (
	ErrFull   = errors.New("spool: full")
	ErrClosed = errors.New("spool: closed")
)

// FileName is the log's name inside the spool directory.
const FileName = "spool.log"

// Config configures a Log.
type Config struct {
	Dir          string        // directory (created 0700 if missing)
	MaxBytes     int64         // unsettled bytes held at most; default 64 MiB
	GroupDelay   time.Duration // a commit waits this long for more appends; default 0 (commits batch while the previous one runs)
	SettleDelay  time.Duration // settle records are written at most this late; default 1 s
	CompactBytes int64         // file size from which dead records are reclaimed; default 1 MiB
	// PreallocBytes is the step the file grows by (zeros written ahead of
	// the records); default 256 KiB.
	PreallocBytes int64
}

func (c *Config) defaults() {
	if c.MaxBytes <= 0 {
		c.MaxBytes = 64 << 20
	}
	if c.SettleDelay <= 0 {
		c.SettleDelay = time.Second
	}
	if c.CompactBytes <= 0 {
		c.CompactBytes = 1 << 20
	}
	if c.PreallocBytes <= 0 {
		c.PreallocBytes = 256 << 10
	}
}

type entry struct {
	seq  uint64
	data []byte
}

// Log is the file-backed spool.
type Log struct {
	cfg  Config
	clk  clock.Clock
	log  *slog.Logger
	path string

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	end      int64 // end of the records (the next record's offset)
	alloc    int64 // file size (records plus preallocated zeros)
	buf      []byte
	spare    []byte
	queued   uint64 // ticket of the last record in buf
	durable  uint64 // every ticket ≤ durable is on the device
	flushing bool
	err      error // sticky write error
	closed   bool
	seq      uint64
	live     map[string]entry
	liveSize int64
	loaded   []string // ids recovered by Open, in order
	timer    clock.Timer
	timerOn  bool

	m logMetrics
}

type logMetrics struct {
	appends, settles, fsyncs, written, full    *metrics.Counter
	quarantined, quarantinedBytes, compactions *metrics.Counter
	recovered                                  *metrics.Counter
	liveBytes, liveEvents                      *metrics.Gauge
	commit                                     *metrics.Histogram
}

// Stats are the log's I/O totals (for benchmarks and tests).
type Stats struct {
	Fsyncs, BytesWritten, Compactions, Quarantined int64
}

// Open opens (or creates) the spool in cfg.Dir and recovers what it holds.
func Open(cfg Config, clk clock.Clock, reg *metrics.Registry, log *slog.Logger) (*Log, error) {
	cfg.defaults()
	if cfg.Dir == "" {
		return nil, errors.New("spool: directory is empty")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	l := &Log{cfg: cfg, clk: clk, log: log, path: filepath.Join(cfg.Dir, FileName), live: make(map[string]entry)}
	l.cond = sync.NewCond(&l.mu)
	l.m = logMetrics{
		appends:          reg.Counter("robot_agent_spool_appends_total", "Control events written to the spool."),
		settles:          reg.Counter("robot_agent_spool_settles_total", "Spooled events settled (acked or rejected by the gateway)."),
		fsyncs:           reg.Counter("robot_agent_spool_fsyncs_total", "fdatasync calls on the spool."),
		written:          reg.Counter("robot_agent_spool_bytes_written_total", "Bytes written to the spool file (compaction included)."),
		full:             reg.Counter("robot_agent_spool_full_total", "Events refused because the spool held its MaxBytes."),
		quarantined:      reg.Counter("robot_agent_spool_quarantined_total", "Damaged regions (torn or corrupt records) moved to a side file."),
		quarantinedBytes: reg.Counter("robot_agent_spool_quarantined_bytes_total", "Bytes moved to quarantine side files."),
		compactions:      reg.Counter("robot_agent_spool_compactions_total", "Spool rewrites and truncations."),
		recovered:        reg.Counter("robot_agent_spool_recovered_total", "Unsettled events found in the spool at start."),
		liveBytes:        reg.Gauge("robot_agent_spool_live_bytes", "Bytes of unsettled events in the spool."),
		liveEvents:       reg.Gauge("robot_agent_spool_live_events", "Unsettled events in the spool."),
		commit:           reg.Histogram("robot_agent_spool_commit_seconds", "Time from Sync to durable.", nil),
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	os.Remove(l.path + ".tmp") // an interrupted compaction; the log itself is intact
	if err := l.recover(); err != nil {
		return nil, err
	}
	return l, nil
}

// recover reads the file, quarantines damage and rebuilds the live set.
func (l *Log) recover() error {
	data, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return l.rewrite(nil)
	}
	if err != nil {
		return fmt.Errorf("spool: read %s: %w", l.path, err)
	}
	damaged := false
	body := data
	if !bytes.HasPrefix(data, []byte(Magic)) {
		n := min(len(data), headerSize)
		l.quarantine(data[:n], 0, fmt.Errorf("%w: file header %q, want %q", ErrCorrupt, data[:n], Magic))
		body, damaged = data[n:], true
	} else {
		body = data[headerSize:]
	}
	base := int64(len(data) - len(body))
	end := len(body)
	for off := 0; off < len(body); {
		if len(body)-off >= 4 && binary.LittleEndian.Uint32(body[off:]) == 0 && allZero(body[off:]) {
			end = off // the preallocated tail
			break
		}
		r, n, err := DecodeRecord(body[off:])
		if err != nil {
			next := resync(body, off+1)
			// A torn record is followed by preallocated zeros: keep
			// only the damaged bytes.
			bad := bytes.TrimRight(body[off:next], "\x00")
			l.quarantine(bad, base+int64(off), err)
			damaged = true
			off = next
			end = off
			continue
		}
		l.apply(r)
		off += n
		end = off
	}
	ids := make([]string, 0, len(l.live))
	for id := range l.live {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(l.live[a].seq, l.live[b].seq) })
	l.loaded = ids
	l.m.recovered.Add(int64(len(ids)))
	if len(ids) > 0 {
		l.log.Info("spool: unsettled control events recovered", "count", len(ids), "bytes", l.liveSize, "path", l.path)
	}
	if damaged {
		return l.rewrite(nil)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	l.f, l.end, l.alloc = f, base+int64(end), int64(len(data))
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

func (l *Log) apply(r Record) {
	if r.Settle {
		if e, ok := l.live[r.ID]; ok {
			l.liveSize -= int64(putSize(r.ID, e.data))
			delete(l.live, r.ID)
		}
		return
	}
	if _, ok := l.live[r.ID]; ok {
		return
	}
	l.seq++
	l.live[r.ID] = entry{seq: l.seq, data: bytes.Clone(r.Data)}
	l.liveSize += int64(putSize(r.ID, r.Data))
}

// resync returns the offset of the next decodable record at or after from
// (len(b) if none).
func resync(b []byte, from int) int {
	for i := from; i+8 <= len(b); i++ {
		if _, _, err := DecodeRecord(b[i:]); err == nil {
			return i
		}
	}
	return len(b)
}

// quarantine copies a damaged region to a side file and reports it.
func (l *Log) quarantine(bad []byte, off int64, why error) {
	side := l.path + ".corrupt-" + strconv.FormatInt(l.clk.Now().UnixNano(), 10)
	werr := os.WriteFile(side, bad, 0o600)
	l.m.quarantined.Inc()
	l.m.quarantinedBytes.Add(int64(len(bad)))
	l.log.Error("spool: damaged records quarantined; the rest is delivered", "path", l.path, "offset", off, "bytes", len(bad), "why", why, "side_file", side, "side_file_err", werr)
}

// rewrite replaces the file with the live records (in order) plus extra,
// atomically (write a temporary file, sync, rename, sync the directory).
// Called with l.mu held or before the log is shared.
func (l *Log) rewrite(extra []byte) error {
	ids := make([]string, 0, len(l.live))
	for id := range l.live {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(l.live[a].seq, l.live[b].seq) })
	b := append(make([]byte, 0, headerSize+l.liveSize+int64(len(extra))), Magic...)
	for _, id := range ids {
		b = appendPut(b, id, l.live[id].data)
	}
	end := int64(len(b))
	b = append(b, make([]byte, roundUp(end+1, l.cfg.PreallocBytes)-end)...)
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("spool: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("spool: sync %s: %w", tmp, err)
	}
	f.Close()
	if err := os.Rename(tmp, l.path); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		d.Sync()
		d.Close()
	}
	nf, err := os.OpenFile(l.path, os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.end, l.alloc = nf, end, int64(len(b))
	l.m.written.Add(int64(len(b)))
	l.m.fsyncs.Add(2)
	l.m.compactions.Inc()
	return nil
}

// Load calls f for every event that was unsettled when the spool was
// opened and is still unsettled, in their original order.
func (l *Log) Load(f func(id string, data []byte)) error {
	l.mu.Lock()
	var out []Record
	for _, id := range l.loaded {
		if e, ok := l.live[id]; ok {
			out = append(out, Record{ID: id, Data: e.data})
		}
	}
	l.mu.Unlock()
	for _, r := range out {
		f(r.ID, r.Data)
	}
	return nil
}

// Append queues a put record and returns its ticket for Sync. It fails
// with ErrFull when the spool holds MaxBytes of unsettled events.
func (l *Log) Append(id string, data []byte) (uint64, error) {
	if id == "" || len(id) > 255 || 2+len(id)+len(data) > MaxBody {
		return 0, fmt.Errorf("spool: event id %q with %d data bytes cannot be stored (id 1..255 bytes, body ≤ %d)", id, len(data), MaxBody)
	}
	n := int64(putSize(id, data))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.err != nil {
		return 0, l.err
	}
	if l.liveSize+n > l.cfg.MaxBytes {
		l.m.full.Inc()
		l.log.Warn("spool: full; new control event refused", "event", id, "max_bytes", l.cfg.MaxBytes, "live_events", len(l.live))
		return 0, fmt.Errorf("%w: %d bytes of unsettled events (max %d)", ErrFull, l.liveSize, l.cfg.MaxBytes)
	}
	if _, dup := l.live[id]; dup {
		return 0, fmt.Errorf("spool: event id %q already stored", id)
	}
	l.seq++
	l.live[id] = entry{seq: l.seq, data: bytes.Clone(data)}
	l.liveSize += n
	l.buf = appendPut(l.buf, id, data)
	l.queued++
	l.m.appends.Inc()
	l.m.liveBytes.Set(l.liveSize)
	l.m.liveEvents.Set(int64(len(l.live)))
	return l.queued, nil
}

// Sync returns when every record up to ticket is durable.
func (l *Log) Sync(ticket uint64) error {
	start := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < ticket {
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		if l.flushing {
			l.cond.Wait()
			continue
		}
		l.commitLocked()
	}
	l.m.commit.ObserveDuration(l.clk.Now().Sub(start))
	return nil
}

// commitLocked writes and syncs everything queued. l.mu is held on entry
// and exit and released during I/O; only one commit runs at a time.
func (l *Log) commitLocked() {
	l.flushing = true
	if l.cfg.GroupDelay > 0 {
		l.mu.Unlock()
		l.clk.Sleep(l.cfg.GroupDelay)
		l.mu.Lock()
	}
	upto := l.queued
	var err error
	switch {
	case l.f == nil:
		err = ErrClosed
	case l.end+int64(len(l.buf)) >= l.cfg.CompactBytes && l.end+int64(len(l.buf)) > 4*l.liveSize:
		// Mostly (or all) settled: rewrite the live records to a fresh
		// preallocated file.
		l.buf = l.buf[:0]
		err = l.rewrite(nil)
	case len(l.buf) > 0:
		b := l.buf
		l.buf, l.spare = l.spare[:0], nil
		f, end, alloc := l.f, l.end, l.alloc
		l.mu.Unlock()
		grow := int64(0)
		if need := end + int64(len(b)); need > alloc {
			// Zeros ahead: the next commits change no metadata.
			grow = roundUp(need, l.cfg.PreallocBytes) - alloc
			_, err = f.WriteAt(make([]byte, grow), alloc)
		}
		if err == nil {
			_, err = f.WriteAt(b, end)
		}
		if err == nil {
			err = fdatasync(f)
		}
		l.mu.Lock()
		if err == nil {
			l.end += int64(len(b))
			l.alloc += grow
			l.m.written.Add(int64(len(b)) + grow)
			l.m.fsyncs.Inc()
		}
		l.spare = b[:0]
	}
	if err != nil {
		l.err = fmt.Errorf("spool: commit to %s: %w", l.path, err)
		l.log.Error("spool: write failed; new events are kept in memory only", "err", err)
	} else {
		l.durable = upto
	}
	l.flushing = false
	l.cond.Broadcast()
}

// Settle records that id needs no delivery any more. The record is written
// with the next commit, at most SettleDelay from now.
func (l *Log) Settle(id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.live[id]
	if !ok {
		return nil
	}
	delete(l.live, id)
	l.liveSize -= int64(putSize(id, e.data))
	l.m.settles.Inc()
	l.m.liveBytes.Set(l.liveSize)
	l.m.liveEvents.Set(int64(len(l.live)))
	if l.closed {
		return nil
	}
	l.buf = appendSettle(l.buf, id)
	l.queued++
	if !l.timerOn {
		l.timerOn = true
		ticket := l.queued
		if l.timer == nil {
			l.timer = l.clk.NewTimer(l.cfg.SettleDelay)
		} else {
			l.timer.Reset(l.cfg.SettleDelay)
		}
		t := l.timer
		go func() {
			<-t.C()
			l.mu.Lock()
			l.timerOn = false
			l.mu.Unlock()
			l.Sync(max(ticket, l.lastQueued()))
		}()
	}
	return nil
}

func (l *Log) lastQueued() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queued
}

// Len returns the number of unsettled events.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live)
}

// Stats returns I/O totals.
func (l *Log) Stats() Stats {
	return Stats{Fsyncs: l.m.fsyncs.Value(), BytesWritten: l.m.written.Value(), Compactions: l.m.compactions.Value(), Quarantined: l.m.quarantined.Value()}
}

// Close writes what is queued (settle records) and closes the file.
func (l *Log) Close() error {
	l.Sync(l.lastQueued())
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	l.cond.Broadcast()
	return err
}
