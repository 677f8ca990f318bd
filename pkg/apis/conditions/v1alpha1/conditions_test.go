package v1alpha1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holder is a minimal Setter.
type holder struct{ conds Conditions }

func (h *holder) GetConditions() Conditions  { return h.conds }
func (h *holder) SetConditions(c Conditions) { h.conds = c }

func TestSetKeepsTransitionTimeWhileStatusStays(t *testing.T) {
	then := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &holder{conds: Conditions{{Type: ReadyCondition, Status: corev1.ConditionFalse, LastTransitionTime: then, Reason: "Old"}}}

	Set(h, Condition{Type: ReadyCondition, Status: corev1.ConditionFalse, Reason: "New"})
	got := h.conds.Get(ReadyCondition)
	if got == nil || !got.LastTransitionTime.Equal(&then) || got.Reason != "New" {
		t.Fatalf("same status: want reason New and time %v kept, got %+v", then, got)
	}

	Set(h, Condition{Type: ReadyCondition, Status: corev1.ConditionTrue})
	got = h.conds.Get(ReadyCondition)
	if got.LastTransitionTime.Equal(&then) || got.LastTransitionTime.IsZero() {
		t.Fatalf("changed status: want a new transition time, got %v", got.LastTransitionTime)
	}
	if len(h.conds) != 1 {
		t.Fatalf("want one condition per type, got %d", len(h.conds))
	}
}

func TestSetAppendsNewTypes(t *testing.T) {
	h := &holder{}
	Set(h, Condition{Type: "A", Status: corev1.ConditionTrue})
	Set(h, Condition{Type: "B", Status: corev1.ConditionFalse})
	if len(h.conds) != 2 || h.conds[0].Type != "A" || h.conds[1].Type != "B" {
		t.Fatalf("want [A B], got %+v", h.conds)
	}
	if h.conds[0].LastTransitionTime.IsZero() {
		t.Errorf("want a transition time on a new condition")
	}
}

func TestConditionsStatusQueries(t *testing.T) {
	conds := Conditions{
		{Type: "T", Status: corev1.ConditionTrue},
		{Type: "F", Status: corev1.ConditionFalse},
		{Type: "U", Status: corev1.ConditionUnknown},
	}
	tests := []struct {
		condType        ConditionType
		isTrue, isFalse bool
	}{
		{"T", true, false},
		{"F", false, true},
		{"U", false, false},
		{"missing", false, false},
	}
	for _, tt := range tests {
		if got := conds.IsTrue(tt.condType); got != tt.isTrue {
			t.Errorf("IsTrue(%s) = %v, want %v", tt.condType, got, tt.isTrue)
		}
		if got := conds.IsFalse(tt.condType); got != tt.isFalse {
			t.Errorf("IsFalse(%s) = %v, want %v", tt.condType, got, tt.isFalse)
		}
	}
	if conds.Get("missing") != nil {
		t.Errorf("Get of a missing type must be nil")
	}
}
