// Package layers holds no code: its test checks that imports run one way
// between the project's packages (issue 38, "one owner per concept";
// docs/architecture.md, "Where each concern lives"). What two families
// share lives below both of them: pkg/quota for admission and the quota
// controller, pkg/scope for authentication and authorization, the apis
// packages for the rules of their types, hooks for what only a binary
// decides (storage.OnMemoryReturned, embeddedetcd.Options.PageOut).
package layers
