package uniq

import (
	"slices"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"b", "a", "b", "", "a", ""}, []string{"b", "a", ""}},
	} {
		got := Of(tc.in)
		if got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("Of(%q) = %#v, want %q", tc.in, got, tc.want)
		}
	}
}
