package loop

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

func TestRecordWriteForgetsAWriteThatDeletedTheObjectSoon(t *testing.T) {
	defer func(d time.Duration) { forgetDeletedAfter = d }(forgetDeletedAfter)
	forgetDeletedAfter = 10 * time.Millisecond
	var w Written
	now := metav1.Now()
	w.RecordWrite("c|/a", &metav1.ObjectMeta{ResourceVersion: "10", DeletionTimestamp: &now, Finalizers: []string{"f"}})
	w.RecordWrite("c|/b", &metav1.ObjectMeta{ResourceVersion: "11", DeletionTimestamp: &now})
	if !w.Stale("c|/b", "10") {
		t.Fatal("a copy older than the write that deleted the object is not skipped")
	}
	kept := func() (keys []string) {
		w.versions.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
		return keys
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(kept()) != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := kept(); len(got) != 1 || got[0] != "c|/a" {
		t.Errorf("keys kept %v, want only c|/a (its write left a finalizer)", got)
	}
}
