package console

import (
	"strings"

	"gatehouse/engine"
)

// Reason codes in words, for the reviewer: the one table of them. The
// model gets engine.Denial's fixed messages, which say as little as
// possible; a reviewer gets what the code means. TestEveryShippedReasonHasASentence
// checks every code the engine and the shipped rules can emit is here.

// reasonFixed are the codes that are not families.
var reasonFixed = map[string]string{
	engine.ReasonUnclassifiable:        "Gatehouse could not classify this action (an unknown tool, an argument the tool does not declare, or a malformed request), so it is refused.",
	engine.ReasonScopeMissing:          "The run was not granted a permission this tool needs.",
	engine.ReasonTrustEscalated:        "The policy would allow this action, but content that cannot authorize anything (a web page, a document, the agent's memory) shaped it, so a person must confirm it.",
	engine.ReasonRevalidationEscalated: "The policy changed after the approval and no longer allows this action as it stands.",
	engine.ReasonAdvisoryEscalated:     "The advisory check flagged this action for a person to look at.",
	engine.ReasonApprovalDenied:        "A person denied it.",
	engine.ReasonApprovalExpired:       "Nobody decided in time, or the run's deadline passed.",
	engine.ReasonApprovalInvalidated:   "The approval no longer matched the action: its arguments, the agent's version or the run's permissions changed.",
	engine.ReasonApprovalCancelled:     "The run was cancelled.",
}

// reasonHardline are the hardline message codes after the prefix. Every
// one is a refusal nobody can override.
var reasonHardline = map[string]string{
	"destructive_command": "It would run a destructive command (deleting from the root, formatting or overwriting a disk, a fork bomb).",
	"host_path_write":     "It would write outside the workspace: the host's system files, SSH keys, a repository's internals or an environment file.",
	"credential_access":   "It would read raw credentials.",
	"host_access":         "It would reach into the host's file system.",
	"privileged":          "It would run a privileged container operation.",
	"metadata_egress":     "It would reach a cloud metadata service, where the machine's own credentials live.",
	"credential_egress":   "It would send a credential out.",
}

// hardlineSuffix closes every hardline sentence.
const hardlineSuffix = " Hardline rules never permit this, whoever asks."

// sideEffectWords say what an action of each class does.
var sideEffectWords = map[engine.SideEffectClass]string{
	engine.SideEffectNone:             "It computes without touching anything outside",
	engine.SideEffectWorkspaceRead:    "It reads a file in the agent's workspace",
	engine.SideEffectWorkspaceWrite:   "It writes a file in the agent's workspace",
	engine.SideEffectNetworkRead:      "It reads from the network",
	engine.SideEffectCodeExecution:    "It runs code",
	engine.SideEffectPackageInstall:   "It installs packages",
	engine.SideEffectSandboxNetwork:   "It opens the sandbox to the network",
	engine.SideEffectExternalMessage:  "It sends a message to someone outside",
	engine.SideEffectExternalWrite:    "It changes data in a system outside",
	engine.SideEffectExternalDelete:   "It deletes data in a system outside",
	engine.SideEffectFinancial:        "It spends money",
	engine.SideEffectPublication:      "It publishes content",
	engine.SideEffectCredentialAccess: "It reads raw credentials",
	engine.SideEffectHostAccess:       "It touches the host's file system",
	engine.SideEffectPrivileged:       "It runs a privileged container operation",
}

// decisionWords end a sentence about a rule of the policy with what it
// decided.
var decisionWords = map[engine.PolicyDecisionType]string{
	engine.DecisionAllow:                  "allows it",
	engine.DecisionAllowWithModifications: "allows it with changed arguments",
	engine.DecisionRequireApproval:        "asks a person first",
	engine.DecisionDeny:                   "does not permit it (or not with these arguments or this target)",
}

// reasonSentence is a reason code in words; d is the decision it came
// with (a matrix or tool rule code means whatever its rule decided).
// ok is false for a code no table knows, which gets a generic sentence
// rather than nothing.
func reasonSentence(code string, d engine.PolicyDecisionType) (sentence string, ok bool) {
	if s, ok := reasonFixed[code]; ok {
		return s, true
	}
	decided, known := decisionWords[d]
	if !known {
		decided = "decided"
	}
	switch {
	case strings.HasPrefix(code, engine.HardlineMessagePrefix):
		if s, ok := reasonHardline[strings.TrimPrefix(code, engine.HardlineMessagePrefix)]; ok {
			return s + hardlineSuffix, true
		}
		return "A hardline rule blocks it." + hardlineSuffix, false
	case strings.HasPrefix(code, matrixPrefix):
		if w, ok := sideEffectWords[engine.SideEffectClass(strings.TrimPrefix(code, matrixPrefix))]; ok {
			return w + ", and for every action of this kind the policy " + decided + ".", true
		}
	case strings.HasPrefix(code, toolRulePrefix) && len(code) > len(toolRulePrefix):
		return "The policy has a rule of its own for the tool " + strings.TrimPrefix(code, toolRulePrefix) + ", and it " + decided + ".", true
	}
	return "The policy " + decided + " (reason " + code + ").", false
}

var (
	matrixPrefix   = engine.MatrixReason("")
	toolRulePrefix = engine.ToolRuleReason("")
)

// reasonText is reasonSentence without its ok.
func reasonText(code string, d engine.PolicyDecisionType) string {
	s, _ := reasonSentence(code, d)
	return s
}

// hardlineDescriptions say what each shipped hardline rule blocks, for
// the policy page. They live here, not in rules/hardline.yaml, because
// those bytes are hashed into every policy_version: a wording change
// there would re-evaluate every approved action at its resume. A rule
// without a description shows its message code's sentence instead, and
// TestEveryHardlineRuleIsDescribed keeps the shipped ones covered.
var hardlineDescriptions = map[string]string{ //nolint:gosec // rule descriptions, not credentials
	"destructive_root_delete": "Recursive deletion of the root or the home directory (rm -r in any flag form, find -delete, a glob over / or ~), however the command is wrapped or quoted.",
	"filesystem_format":       "Formatting or wiping a file system: mkfs and its family, mke2fs, mkswap, wipefs, blkdiscard.",
	"block_device_write":      "Writing to a block device under /dev (dd of=, tee, redirections, cp or mv onto it, shred).",
	"fork_bomb":               "A function that calls itself twice in the background or a pipeline: a fork bomb, under any name.",
	"recursive_chmod_root":    "chmod, chown or chgrp with -R on / or ~.",
	"host_path_etc":           "Writing a file under /etc.",
	"host_path_usr":           "Writing a file under /usr.",
	"ssh_directory":           "Writing into an .ssh directory (keys, authorized_keys, config).",
	"git_directory":           "Writing into a repository's .git directory or a .git file (config, hooks, gitdir redirects), in any spelling Windows accepts.",
	"dotenv_file":             "Writing a .env file or a .env.* variant, where secrets live.",
	"credential_class":        "Any action that reads raw credentials.",
	"host_class":              "Any action on the host's file system.",
	"privileged_class":        "Any privileged container operation.",
	"metadata_egress":         "Reaching a cloud metadata service (169.254.0.0/16, fe80::/10, fd00:ec2::254, metadata.google.internal) from anything that can send a request.",
	"credential_egress":       "Sending a credential-shaped value (a key, a token, a private key) out through a request, a message, a publication or an install.",
	"credential_egress_exec":  "The same for code run where it can reach the network: a credential in a command, unless the sandbox is isolated with networking off.",
}

// hardlineDescription is what a hardline rule blocks, in words.
func hardlineDescription(h engine.HardlineRule) string {
	if d, ok := hardlineDescriptions[h.ID]; ok {
		return d
	}
	return reasonText(h.MessageCode, engine.DecisionDeny)
}

// advisorySignals are the judgment advisor's signals (package advisor) in
// words. Another advisor's identifier is shown as it is.
var advisorySignals = map[string]string{
	"advisory.addresses_ai_system":    "The outbound text looks addressed to an AI system.",
	"advisory.private_person_details": "The query looks like it carries private details of an identifiable person.",
	"advisory.prose_or_encoded_blob":  "The URL's path or query looks like it carries prose or an encoded blob.",
	"advisory.input_truncated":        "A value was too long to judge whole.",
}

// signalText is an advisory signal in words.
func signalText(id string) string {
	if s, ok := advisorySignals[id]; ok {
		return s
	}
	return "Advisory signal " + id + "."
}
