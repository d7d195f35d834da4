package camera

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/robot-agent/robot-agent/config/field"
)

func TestWantValidate(t *testing.T) {
	for _, tc := range []struct {
		w    Want
		want []string
	}{
		{Want{Width: 640, Height: 480, FPS: 15}, nil},
		{Want{Width: 16, Height: 4096, FPS: 120}, nil},
		{Want{Width: 641, Height: 8, FPS: 0}, []string{
			"width: 641: want an even number in 16..4096",
			"height: 8: want an even number in 16..4096",
			"fps: 0: want 1..120"}},
		{Want{Width: 8192, Height: 480, FPS: math.NaN()}, []string{
			"width: 8192: want an even number in 16..4096",
			"fps: NaN: want 1..120"}},
	} {
		err := tc.w.Validate()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%+v: %v", tc.w, err)
			}
			continue
		}
		if !errors.Is(err, field.ErrInvalid) || err.Error() != strings.Join(tc.want, "\n") {
			t.Errorf("%+v: Validate() =\n%v\nwant\n%s", tc.w, err, strings.Join(tc.want, "\n"))
		}
	}
}
