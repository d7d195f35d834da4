package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// On-disk format (little endian):
//
//	file   = magic record*
//	magic  = "RASPOOL1"
//	record = len:u32 crc:u32 body[len]     crc = CRC-32C of body
//	body   = kind:u8 ...
//	  kind 1 (put):    idlen:u8 id[idlen] data[...]   an event to deliver
//	  kind 2 (settle): id[...]                         that event needs no delivery
//
// A record is valid only if its whole body is present and its CRC matches;
// anything else is a torn write (power lost mid-append) or corruption, and
// is quarantined (see Open).

// Magic starts every spool file.
const Magic = "RASPOOL1"

const (
	kindPut    = 1
	kindSettle = 2

	headerSize = 8
	// MaxBody is the largest record body: an event id of up to 255 bytes
	// and a control message of up to 1 MiB.
	MaxBody = 1 + 1 + 255 + 1<<20
)

// Record decoding errors.
var (
	ErrTorn    = errors.New("spool: record incomplete (torn write)")
	ErrCorrupt = errors.New("spool: record corrupt")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one decoded record.
type Record struct {
	Settle bool   // a settle record (Data is nil)
	ID     string // event id
	Data   []byte // the event's encoded control message (put records)
}

// appendPut appends a put record for id/data to b.
func appendPut(b []byte, id string, data []byte) []byte {
	body := 1 + 1 + len(id) + len(data)
	b = binary.LittleEndian.AppendUint32(b, uint32(body))
	crcAt := len(b)
	b = append(b, 0, 0, 0, 0, kindPut, byte(len(id)))
	b = append(b, id...)
	b = append(b, data...)
	binary.LittleEndian.PutUint32(b[crcAt:], crc32.Checksum(b[crcAt+4:], castagnoli))
	return b
}

// appendSettle appends a settle record for id to b.
func appendSettle(b []byte, id string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(1+len(id)))
	crcAt := len(b)
	b = append(b, 0, 0, 0, 0, kindSettle)
	b = append(b, id...)
	binary.LittleEndian.PutUint32(b[crcAt:], crc32.Checksum(b[crcAt+4:], castagnoli))
	return b
}

func putSize(id string, data []byte) int { return 8 + 2 + len(id) + len(data) }

// DecodeRecord decodes the record at the start of b. It returns the record
// and its encoded length, ErrTorn if b ends before the record does, or
// ErrCorrupt (wrapped, naming the field) if the record is invalid. Data
// aliases b.
func DecodeRecord(b []byte) (Record, int, error) {
	if len(b) < 8 {
		return Record{}, 0, fmt.Errorf("%w: %d header bytes of 8", ErrTorn, len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if n < 2 || n > MaxBody {
		return Record{}, 0, fmt.Errorf("%w: length %d outside [2, %d]", ErrCorrupt, n, MaxBody)
	}
	if len(b) > 8 && b[8] != kindPut && b[8] != kindSettle {
		return Record{}, 0, fmt.Errorf("%w: kind %d", ErrCorrupt, b[8])
	}
	if uint64(len(b)-8) < uint64(n) {
		return Record{}, 0, fmt.Errorf("%w: %d body bytes of %d", ErrTorn, len(b)-8, n)
	}
	body := b[8 : 8+n]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[4:]); got != want {
		return Record{}, 0, fmt.Errorf("%w: crc %08x, want %08x", ErrCorrupt, got, want)
	}
	switch body[0] {
	case kindPut:
		idl := int(body[1])
		if idl == 0 || 2+idl > len(body) {
			return Record{}, 0, fmt.Errorf("%w: put id length %d in a body of %d", ErrCorrupt, idl, len(body))
		}
		return Record{ID: string(body[2 : 2+idl]), Data: body[2+idl:]}, int(8 + n), nil
	default: // kindSettle
		return Record{Settle: true, ID: string(body[1:])}, int(8 + n), nil
	}
}
