package embeddedetcd

import "testing"

func TestWorthDefragmenting(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		size, inUse int64
		want        bool
	}{
		{name: "objects deleted and compacted away", size: 120 * mib, inUse: 8 * mib, want: true},
		{name: "a small file", size: 12 * mib, inUse: 1 * mib},
		{name: "mostly data", size: 400 * mib, inUse: 300 * mib},
		{name: "as much free as data", size: 64 * mib, inUse: 32 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := worthDefragmenting(tc.size, tc.inUse); got != tc.want {
				t.Errorf("worthDefragmenting(%d, %d) = %v, want %v", tc.size, tc.inUse, got, tc.want)
			}
		})
	}
}
