package protocol_test

import (
	"encoding/binary"
	"fmt"

	"github.com/robot-agent/robot-agent/protocol"
)

// A robot builds a mic frame (20 ms of 16 kHz PCM16) and a gateway parses it.
func ExampleAppendFrame() {
	pcm := make([]byte, 640)
	binary.LittleEndian.PutUint16(pcm, 0x1234)

	buf := make([]byte, 0, protocol.HeaderSize+len(pcm)) // reused per frame
	msg := protocol.AppendFrame(buf, protocol.Header{
		Kind:      protocol.KindMicAudio,
		Flag:      protocol.FlagContinue,
		Stream:    7,          // utterance id
		Seq:       42,         // per-kind sequence number
		Timestamp: 1234567890, // µs on the robot's monotonic clock
	}, pcm)
	fmt.Printf("header % x\n", msg[:protocol.HeaderSize])

	h, payload, err := protocol.ParseHeader(msg)
	if err != nil {
		fmt.Println("error:", protocol.FrameErrorCode(err), err)
		return
	}
	fmt.Printf("%s flag=%d utterance=%d seq=%d ts=%dµs samples=%d first=%#x\n",
		h.Kind, h.Flag, h.Stream, h.Seq, h.Timestamp, len(payload)/2, binary.LittleEndian.Uint16(payload))

	// A frame whose length field disagrees with its size is rejected.
	_, _, err = protocol.ParseHeader(msg[:100])
	fmt.Println(protocol.FrameErrorCode(err), err)
	// Output:
	// header 01 01 01 00 07 00 00 00 2a 00 00 00 d2 02 96 49 00 00 00 00 80 02 00 00
	// mic_audio flag=1 utterance=7 seq=42 ts=1234567890µs samples=320 first=0x1234
	// bad_frame protocol: malformed message: header length field 640, but 76 payload bytes follow
}

// A robot decodes the gateway's control messages; errors map to the code of
// the error message it sends back.
func ExampleDecodeFromGateway() {
	for _, in := range []string{
		`{"type":"interrupt","event_id":"s1-9","response_id":3}`,
		`{"type":"tts","response_id":3,"audio":"AAA"}`,
		`{"type":"dance"}`,
	} {
		m, err := protocol.DecodeFromGateway([]byte(in))
		if err != nil {
			fmt.Println(protocol.ErrorCode(err), err)
			continue
		}
		switch m := m.(type) {
		case *protocol.Interrupt:
			ack, _ := protocol.Marshal(&protocol.Ack{Meta: protocol.Meta{EventID: m.EventID}})
			fmt.Printf("stop responses <= %d, reply %s\n", m.ResponseID, ack)
		}
	}
	// Output:
	// stop responses <= 3, reply {"type":"ack","event_id":"s1-9"}
	// bad_message tts: protocol: malformed message: field "audio" is not valid base64: illegal base64 data at input byte 0
	// unknown_type protocol: unsupported control type: control type "dance" from the gateway is unknown
}
