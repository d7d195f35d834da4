package portaudio

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robot-agent/robot-agent/hw"
)

// Device describes one PortAudio device as enumerated now.
type Device struct {
	// Index is PortAudio's device index. It changes whenever devices come
	// and go; it is printed for diagnostics and never used for selection.
	Index int
	// Name as PortAudio reports it, e.g. "USB PnP Sound Device: Audio (hw:1,0)".
	Name string
	// HostAPI is the PortAudio host API, e.g. "ALSA".
	HostAPI string

	MaxInputChannels  int
	MaxOutputChannels int
	DefaultSampleRate int

	DefaultLowInputLatency   time.Duration
	DefaultHighInputLatency  time.Duration
	DefaultLowOutputLatency  time.Duration
	DefaultHighOutputLatency time.Duration

	// DefaultInput and DefaultOutput mark the system default devices.
	DefaultInput  bool
	DefaultOutput bool
}

// alsaCardSuffix matches the " (hw:N,M)" PortAudio appends to ALSA hardware
// device names; N is the card number, which changes when a USB device is
// plugged into another port or enumerated in another order.
var alsaCardSuffix = regexp.MustCompile(`\s*\((plug)?hw:\d+,\d+\)$`)

// StableName is Name without the ALSA card and device numbers: the part of
// the name that survives unplugging and replugging.
func (d Device) StableName() string { return alsaCardSuffix.ReplaceAllString(d.Name, "") }

// Has reports whether d can be used in the given direction.
func (d Device) Has(output bool) bool {
	if output {
		return d.MaxOutputChannels > 0
	}
	return d.MaxInputChannels > 0
}

// Errors from device selection.
var (
	// ErrAmbiguous: a device name or substring matches several devices.
	ErrAmbiguous = errors.New("portaudio: device name is ambiguous")
)

func direction(output bool) string {
	if output {
		return "output"
	}
	return "input"
}

// Match selects the device for want among devs, for input or output.
//
// want is, in order of precedence: empty (the system default device), an
// exact device name, a name without its ALSA "(hw:N,M)" suffix (matched
// case-insensitively, so a USB device is found again under a new card
// number), or a case-insensitive substring of exactly one device's name.
// Devices are never selected by index. Errors wrap hw.ErrNoDevice (nothing
// matches; the message lists the candidates) or ErrAmbiguous.
func Match(devs []Device, want string, output bool) (Device, error) {
	var cands []Device
	for _, d := range devs {
		if d.Has(output) {
			cands = append(cands, d)
		}
	}
	names := func(ds []Device) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprintf("%q", d.Name))
		}
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	want = strings.TrimSpace(want)
	if want == "" {
		for _, d := range cands {
			if (output && d.DefaultOutput) || (!output && d.DefaultInput) {
				return d, nil
			}
		}
		return Device{}, fmt.Errorf("%w: no default %s device (available: %s)", hw.ErrNoDevice, direction(output), names(cands))
	}
	for _, d := range cands {
		if d.Name == want {
			return d, nil
		}
	}
	lw := strings.ToLower(want)
	stable := strings.ToLower(alsaCardSuffix.ReplaceAllString(want, ""))
	var hits []Device
	for _, d := range cands {
		if strings.ToLower(d.StableName()) == stable {
			hits = append(hits, d)
		}
	}
	if len(hits) == 0 {
		for _, d := range cands {
			if strings.Contains(strings.ToLower(d.Name), lw) || strings.Contains(strings.ToLower(d.StableName()), stable) {
				hits = append(hits, d)
			}
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return Device{}, fmt.Errorf("%w: no %s device matches %q (available: %s)", hw.ErrNoDevice, direction(output), want, names(cands))
	}
	return Device{}, fmt.Errorf("%w: %q matches %d %s devices: %s; use a longer part of the name", ErrAmbiguous, want, len(hits), direction(output), names(hits))
}

// SortDevices orders devices for display: defaults first, then by name.
func SortDevices(devs []Device) {
	slices.SortStableFunc(devs, func(a, b Device) int {
		ad, bd := a.DefaultInput || a.DefaultOutput, b.DefaultInput || b.DefaultOutput
		if ad != bd {
			if ad {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}
