package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the condition of type t, or nil when there is none.
func (c Conditions) Get(t ConditionType) *Condition {
	for i := range c {
		if c[i].Type == t {
			return &c[i]
		}
	}
	return nil
}

// IsTrue tells whether the condition of type t exists and has status True.
func (c Conditions) IsTrue(t ConditionType) bool {
	cond := c.Get(t)
	return cond != nil && cond.Status == corev1.ConditionTrue
}

// IsFalse tells whether the condition of type t exists and has status False.
func (c Conditions) IsFalse(t ConditionType) bool {
	cond := c.Get(t)
	return cond != nil && cond.Status == corev1.ConditionFalse
}

// Set adds cond to the conditions of to, or replaces the condition of the
// same type. The last transition time moves only when the status changes, so
// that repeated reconciles do not rewrite it; a zero time in cond means now.
func Set(to Setter, cond Condition) {
	conds := to.GetConditions()
	if cond.LastTransitionTime.IsZero() {
		cond.LastTransitionTime = metav1.Now()
	}
	if existing := conds.Get(cond.Type); existing != nil {
		if existing.Status == cond.Status {
			cond.LastTransitionTime = existing.LastTransitionTime
		}
		*existing = cond
		to.SetConditions(conds)
		return
	}
	to.SetConditions(append(conds, cond))
}
