package protocol

// WebSocket close codes used by the protocol (docs/protocol.md §2.5).
const (
	CloseNormal          = 1000 // orderly end: shutdown, after go_away
	CloseGoingAway       = 1001 // endpoint restarting; robot giving up on a dead link
	CloseProtocolError   = 1002 // handshake failed: bad hello, subprotocol not echoed, version mismatch
	ClosePolicyViolation = 1008 // no hello in time; device id ≠ header; credentials revoked
	CloseMessageTooBig   = 1009 // a message over the receiver's hard read limit
	CloseInternalError   = 1011 // unexpected failure of the sender
	CloseTryAgainLater   = 1013 // gateway overloaded
	CloseSessionReplaced = 4000 // a newer connection with the same device id took over
)

// HelloTimeoutMS is how long each side waits for the other's hello (§3.1).
const HelloTimeoutMS = 5000
