package exepages

import (
	"errors"
	"reflect"
	"testing"
)

func TestReleaseDropsTheExecutablesResidentPages(t *testing.T) {
	r, err := Release()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Mapped == 0 || r.ResidentBefore == 0 {
		t.Fatalf("nothing mapped or resident: %+v", r)
	}
	// The test binary ran its tests out of those pages: most of them were
	// resident, and only the few the release itself runs come back.
	if r.ResidentAfter > r.ResidentBefore/2 {
		t.Fatalf("resident file-backed memory %d bytes before, %d after: want at most half", r.ResidentBefore, r.ResidentAfter)
	}
}

func TestReadOnlyMappingsAreThoseOfTheFileHoldingTheAddress(t *testing.T) {
	maps := `00400000-034b0000 r-xp 00000000 fe:00 9986346                            /tmp/b/shard
034b0000-06f4b000 r--p 030b0000 fe:00 9986346                            /tmp/b/shard
06f4b000-07050000 rw-p 06b4b000 fe:00 9986346                            /tmp/b/shard
07050000-09000000 rw-p 00000000 00:00 0
07100000-07200000 r--p 00000000 fe:01 9986346                            /mnt/other
7f0a38288000-7f0a3848a000 r--p 00000000 fe:00 1234                       /tmp/b/shard-other
7f0a39000000-7f0a39100000 r--p 00000000 fe:00 9986346                    /tmp/b/shard (deleted)
7ffc1000-7ffc2000 r-xp 00000000 00:00 0                                  [vdso]
`
	got, err := readOnlyMappings([]byte(maps), 0x500000)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x400000, 0x34b0000}, {0x34b0000, 0x6f4b000}, {0x7f0a39000000, 0x7f0a39100000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	if _, err := readOnlyMappings([]byte("zz-00 r--p 0 fe:00 9986346 /tmp/b/shard\n"), 0x500000); err == nil {
		t.Fatal("a malformed address range was accepted")
	}
	if _, err := readOnlyMappings([]byte(maps), 0x7ffc1500); err == nil {
		t.Fatal("an address outside any file mapping was accepted")
	}
}
