package loop

import "testing"

func TestWrittenSkipsCopiesOlderThanTheLastWrite(t *testing.T) {
	var w Written
	if w.Stale("c|ns/a", "5") {
		t.Fatalf("a key never written is stale")
	}
	w.Record("c|ns/a", "10")
	if !w.Stale("c|ns/a", "9") {
		t.Errorf("copy at 9 after a write at 10 is not stale")
	}
	if w.Stale("c|ns/b", "9") {
		t.Errorf("another key is stale")
	}
	if w.Stale("c|ns/a", "10") {
		t.Errorf("the written copy itself is stale")
	}
	// Seen once, the write is forgotten: an older copy is not judged.
	if w.Stale("c|ns/a", "9") {
		t.Errorf("write not forgotten once the informer showed it")
	}

	w.Record("c|ns/a", "20")
	if w.Stale("c|ns/a", "21") {
		t.Errorf("a newer copy (someone else's write) is stale")
	}
	w.Record("c|ns/a", "30")
	w.Forget("c|ns/a")
	if w.Stale("c|ns/a", "1") {
		t.Errorf("stale after Forget")
	}
	// Resource versions that are not numbers are never judged.
	w.Record("c|ns/a", "opaque")
	if w.Stale("c|ns/a", "1") {
		t.Errorf("a non-numeric write made a copy stale")
	}
	w.Record("c|ns/a", "10")
	if w.Stale("c|ns/a", "opaque") {
		t.Errorf("a non-numeric copy is stale")
	}
}
