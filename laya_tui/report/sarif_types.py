"""The SARIF 2.1.0 objects that ``--sarif`` writes (:mod:`laya_tui.report.sarif`), as typed
dicts: only the properties laya-tui sets, named as the OASIS schema names them. A result's
and a rule's ``properties`` stay open: SARIF's property bag (any JSON)."""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import Any, NotRequired, TypeAlias, TypedDict

#: SARIF's property bag: a finding's JSON facts by name (probe, kind, subject, count,
#: the baseline change...), free-form in SARIF itself.
PropertyBag: TypeAlias = dict[str, Any]


class Message(TypedDict):
    """A ``message`` (also a ``multiformatMessageString``): plain text."""

    text: str


class ArtifactLocation(TypedDict):
    uri: str
    uriBaseId: str


class Region(TypedDict, total=False):
    startLine: int
    startColumn: int
    endLine: int
    endColumn: int


class PhysicalLocation(TypedDict):
    artifactLocation: ArtifactLocation
    region: NotRequired[Region]


class LogicalLocation(TypedDict):
    name: str
    kind: str


class Location(TypedDict):
    """A result's ``locations`` item."""

    physicalLocation: PhysicalLocation
    logicalLocations: NotRequired[list[LogicalLocation]]


class RelatedLocation(TypedDict):
    """A result's ``relatedLocations`` item (the user stack, other kept modules)."""

    id: int
    physicalLocation: PhysicalLocation
    message: Message


class Suppression(TypedDict):
    kind: str
    status: str
    justification: str


class Replacement(TypedDict):
    deletedRegion: Region
    insertedContent: Message


class ArtifactChange(TypedDict):
    artifactLocation: ArtifactLocation
    replacements: list[Replacement]


class Fix(TypedDict):
    description: Message
    artifactChanges: list[ArtifactChange]


class Result(TypedDict):
    """One ``result``: a finding, or a found precision plan with its ``fixes``."""

    ruleId: str
    ruleIndex: int
    level: str
    message: Message
    locations: list[Location]
    kind: NotRequired[str]
    relatedLocations: NotRequired[list[RelatedLocation]]
    fixes: NotRequired[list[Fix]]
    partialFingerprints: NotRequired[dict[str, str]]
    baselineState: NotRequired[str]
    suppressions: NotRequired[list[Suppression]]
    properties: NotRequired[PropertyBag]


class Configuration(TypedDict):
    level: str


class RuleProperties(TypedDict):
    tags: list[str]


class ReportingDescriptor(TypedDict):
    """A rule: one per finding kind (``laya_tui.report.rules``)."""

    id: str
    name: str
    shortDescription: Message
    fullDescription: Message
    help: Message
    helpUri: NotRequired[str]
    defaultConfiguration: NotRequired[Configuration]
    properties: NotRequired[RuleProperties]


class Notification(TypedDict):
    level: str
    message: Message


class Invocation(TypedDict):
    executionSuccessful: bool
    toolExecutionNotifications: NotRequired[list[Notification]]


class Driver(TypedDict):
    name: str
    version: str
    semanticVersion: str
    rules: list[ReportingDescriptor]


class Tool(TypedDict):
    driver: Driver


class UriBase(TypedDict):
    uri: str


class GateOutcome(TypedDict):
    """A gate in the run's properties."""

    name: str | None
    passed: bool
    failures: int


class ReportRef(TypedDict):
    schema: str | None
    created: str | None


class RunProperties(TypedDict):
    """The run's property bag as laya-tui fills it."""

    verdict: str
    gates: list[GateOutcome]
    findings: int
    results: int
    resultsLeftOut: int
    withoutLocation: int
    report: ReportRef
    baseline: NotRequired[str | None]


class Run(TypedDict):
    tool: Tool
    invocations: list[Invocation]
    originalUriBaseIds: dict[str, UriBase]
    results: list[Result]
    properties: RunProperties


#: The SARIF log (``$schema`` is not an identifier: the functional form).
SarifLog = TypedDict("SarifLog", {"$schema": str, "version": str, "runs": list[Run]})
