package state

import (
	"regexp"
	"sort"
)

// The configuration of the modules lives with them: state/gpio,
// state/imu and state/sysfs own their options and validation, and
// state/modules the "state" section that gathers them.

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// ValidName reports whether s is a valid logical input/output name (and
// function call type): lower-case letters, digits and _, starting with a
// letter, at most 32.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
