package embeddedetcd

import (
	"errors"
	"fmt"
	"testing"
)

func TestIdlePagesGoBackWhenWritesPause(t *testing.T) {
	p := idlePages{never: true}
	step := func(applied uint64, want bool, err error) {
		t.Helper()
		got := p.worthReleasing(applied)
		if got != want {
			t.Fatalf("at applied index %d after %d (released at %d, never %v): worth releasing %v, want %v", applied, p.last, p.releasedAt, p.never, got, want)
		}
		if got {
			p.released(applied, err)
		}
		p.last = applied
	}
	step(500, false, nil) // start-up's writes
	step(504, true, nil)  // paused: the first release
	step(505, false, nil) // a trickle, too little since
	step(5000, false, nil)
	step(9000, false, nil) // a burst
	step(9003, true, nil)  // paused
	step(9003, false, nil) // nothing new
	step(9100, false, nil) // busy again
	step(9105, true, nil)  // paused after 102 entries since the last release
	step(9205, false, nil) // a hundred in one interval is not quiet
	step(9206, true, nil)  // paused again
	p.asked = true         // a compaction: few entries, many pages
	step(9250, false, nil) // still busy
	step(9252, true, nil)  // paused: released, however few entries since
	step(9253, false, nil) // the ask was answered
	p.never = true         // the file was mapped anew
	step(9253, true, errors.New("madvise failed"))
	step(9254, true, nil) // an error is retried
	step(9400, false, nil)
	step(9400, true, fmt.Errorf("%w: EINVAL", errors.ErrUnsupported))
	step(9600, false, nil)
	step(9600, false, nil) // unsupported: never again
}
