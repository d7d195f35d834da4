package portaudio

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-agent/robot-agent/hw"
)

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func defaultDev() Device {
	return Device{Name: "default", HostAPI: "ALSA", MaxInputChannels: 32, MaxOutputChannels: 32, DefaultSampleRate: 44100,
		DefaultLowInputLatency: 9 * time.Millisecond, DefaultLowOutputLatency: 9 * time.Millisecond,
		DefaultInput: true, DefaultOutput: true}
}

func usbDev(card int) Device {
	return Device{Name: fmt.Sprintf("USB PnP Sound Device: Audio (hw:%d,0)", card), HostAPI: "ALSA",
		MaxInputChannels: 1, MaxOutputChannels: 2, DefaultSampleRate: 48000,
		DefaultLowInputLatency: 8 * time.Millisecond, DefaultLowOutputLatency: 8 * time.Millisecond}
}

func TestStableName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"USB PnP Sound Device: Audio (hw:1,0)", "USB PnP Sound Device: Audio"},
		{"HDA Intel PCH: ALC887-VD Analog (hw:0,0)", "HDA Intel PCH: ALC887-VD Analog"},
		{"pulse", "pulse"},
		{"Mic (plughw:2,3)", "Mic"},
		{"weird (hw:x,0)", "weird (hw:x,0)"},
	} {
		if got := (Device{Name: tc.name}).StableName(); got != tc.want {
			t.Errorf("StableName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMatch(t *testing.T) {
	hdmi := Device{Name: "HDA Intel HDMI: 0 (hw:0,3)", MaxOutputChannels: 8, Index: 3}
	mic := Device{Name: "Blue Yeti: USB Audio (hw:3,0)", MaxInputChannels: 2, Index: 4}
	devs := []Device{defaultDev(), usbDev(2), hdmi, mic}
	for _, tc := range []struct {
		want   string
		output bool
		name   string // expected device, or "" for an error
		err    error
	}{
		{"", true, "default", nil},
		{"", false, "default", nil},
		{"default", true, "default", nil},
		{"USB PnP Sound Device: Audio (hw:2,0)", true, usbDev(2).Name, nil},
		// The card number changed since the name was configured.
		{"USB PnP Sound Device: Audio (hw:1,0)", true, usbDev(2).Name, nil},
		{"usb pnp sound device: audio", false, usbDev(2).Name, nil},
		{"PnP", true, usbDev(2).Name, nil},
		{"yeti", false, mic.Name, nil},
		{"yeti", true, "", hw.ErrNoDevice}, // input only
		{"HDMI", true, hdmi.Name, nil},
		{"USB Audio", false, mic.Name, nil},
		{"Audio", false, "", ErrAmbiguous},
		{"hw:", true, "", ErrAmbiguous},
		{"nothing like it", true, "", hw.ErrNoDevice},
	} {
		t.Run(fmt.Sprintf("%s/%s", direction(tc.output), tc.want), func(t *testing.T) {
			d, err := Match(devs, tc.want, tc.output)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Match = %q, %v; want error %v", d.Name, err, tc.err)
				}
				if !strings.Contains(err.Error(), "\"") {
					t.Errorf("error %q does not name the devices", err)
				}
				return
			}
			if err != nil || d.Name != tc.name {
				t.Fatalf("Match = %q, %v; want %q", d.Name, err, tc.name)
			}
		})
	}
	if _, err := Match([]Device{usbDev(1)}, "", true); !errors.Is(err, hw.ErrNoDevice) {
		t.Errorf("no default device: err = %v, want hw.ErrNoDevice", err)
	}
}

func TestSortDevices(t *testing.T) {
	devs := []Device{usbDev(2), {Name: "alpha", MaxOutputChannels: 1}, defaultDev()}
	SortDevices(devs)
	var got []string
	for _, d := range devs {
		got = append(got, d.Name)
	}
	want := []string{"default", "USB PnP Sound Device: Audio (hw:2,0)", "alpha"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		// Defaults first, then by name (byte order: upper case first).
		t.Errorf("order %q, want %q", got, want)
	}
}
