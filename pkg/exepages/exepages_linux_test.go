package exepages

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

func TestPathMappingsAreThoseOfThePathNow(t *testing.T) {
	maps := `00400000-034b0000 r-xp 00000000 fe:00 9986346                            /tmp/b/shard
7efe28000000-7f00a8000000 r--s 00000000 fe:00 9994834                    /data/etcd/member/snap/db
7efe10000000-7efe20000000 r--s 00000000 fe:00 9990000                    /data/etcd/member/snap/db (deleted)
7efe08000000-7efe09000000 rw-s 00000000 fe:00 9994834                    /data/etcd/member/snap/db
7efe00000000-7efe01000000 r--s 00000000 fe:00 9994835                    /data/etcd/member/snap/db.tmp
7efd00000000-7efd01000000 r--s 00000000 fe:00 9994836                    /data/etcd/member/snap/my db
`
	got, err := pathMappings([]byte(maps), "/data/etcd/member/snap/db")
	if err != nil {
		t.Fatal(err)
	}
	if want := []mapping{{0x7efe28000000, 0x7f00a8000000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	got, err = pathMappings([]byte(maps), "/data/etcd/member/snap/my db")
	if err != nil {
		t.Fatal(err)
	}
	if want := []mapping{{0x7efd00000000, 0x7efd01000000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a path with a space: got %#v, want %#v", got, want)
	}
}

func TestReleaseFileDropsAMappedFilesPages(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs, whose pages the kernel cannot page out without swap", dir)
	}
	const size = 8 << 20
	path := filepath.Join(dir, "db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("shardplane"), size/6+1)[:size], 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Written pages are dirty until they reach the disk.
	if err := unix.Fsync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	sum := 0
	for i := 0; i < size; i += os.Getpagesize() {
		sum += int(data[i])
	}
	resident := func() int {
		vec := make([]byte, size/os.Getpagesize())
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), size, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatal(errno)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n * os.Getpagesize()
	}
	if got := resident(); got < size/2 {
		t.Fatalf("%d of %d bytes resident after reading every page", got, size)
	}

	r, err := ReleaseFile(path)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Mapped != size {
		t.Fatalf("released %d bytes of mappings, want %d", r.Mapped, size)
	}
	if got := resident(); got > size/8 {
		t.Fatalf("%d of %d bytes still resident after the release", got, size)
	}
	if r.ResidentBefore-r.ResidentAfter < size/2 {
		t.Fatalf("resident file-backed memory %d bytes before, %d after: want %d fewer", r.ResidentBefore, r.ResidentAfter, size/2)
	}
	// What was paged out reads the same.
	again := 0
	for i := 0; i < size; i += os.Getpagesize() {
		again += int(data[i])
	}
	if again != sum || string(data[size-6:]) != string(bytes.Repeat([]byte("shardplane"), size/6+1)[size-6:size]) {
		t.Fatal("the file's contents changed after the release")
	}
}

func TestReleaseFileOfAFileNobodyMaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ReleaseFile(path)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil || r.Mapped != 0 {
		t.Fatalf("got %+v, %v; want nothing mapped and no error", r, err)
	}
	if _, err := ReleaseFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file was released")
	}
}
