package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the type of a condition, in CamelCase or in
// foo.example.com/CamelCase.
type ConditionType string

// ReadyCondition is the condition type that summarizes the operational state
// of an object.
const ReadyCondition ConditionType = "Ready"

// ConditionSeverity classifies the reason of a condition whose status is
// False, so that users and machines can tell how bad the situation is.
type ConditionSeverity string

const (
	// ConditionSeverityError says that the reason is an error the object
	// cannot recover from without intervention.
	ConditionSeverityError ConditionSeverity = "Error"
	// ConditionSeverityWarning says that the reason is a problem the object
	// may recover from.
	ConditionSeverityWarning ConditionSeverity = "Warning"
	// ConditionSeverityInfo says that the reason is purely informational.
	ConditionSeverityInfo ConditionSeverity = "Info"
	// ConditionSeverityNone is the severity of conditions whose status is not
	// False.
	ConditionSeverityNone ConditionSeverity = ""
)

// Condition is an observation of the operational state of an object.
type Condition struct {
	// type of the condition, in CamelCase or in foo.example.com/CamelCase.
	//
	// +required
	Type ConditionType `json:"type"`

	// status of the condition, one of True, False, Unknown.
	//
	// +required
	Status corev1.ConditionStatus `json:"status"`

	// severity classifies the reason code, so that users or machines can
	// tell the situation at once. It is set only when status is False.
	//
	// +optional
	Severity ConditionSeverity `json:"severity,omitempty"`

	// lastTransitionTime is the last time the condition changed from one
	// status to another.
	//
	// +required
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// reason is the reason for the last transition, in CamelCase.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// message is a human readable message with details about the last
	// transition.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// Conditions is the list of conditions of an object, at most one per type.
type Conditions []Condition

// Getter is implemented by objects whose status carries conditions.
//
// +k8s:deepcopy-gen=false
type Getter interface {
	// GetConditions returns the conditions of the object.
	GetConditions() Conditions
}

// Setter is implemented by objects whose conditions can be replaced.
//
// +k8s:deepcopy-gen=false
type Setter interface {
	Getter
	// SetConditions replaces the conditions of the object.
	SetConditions(Conditions)
}
