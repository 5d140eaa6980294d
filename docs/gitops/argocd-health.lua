-- Argo CD health of a vectorpilot object (SearchCluster, VectorIndex, SnapshotPolicy,
-- VectorSnapshot, BenchmarkRun), from the conditions the operator writes: Paused →
-- Suspended; a spec the operator has not observed yet → Progressing; Degraded → Degraded
-- with its reason; Ready → Healthy (a VectorSnapshot or BenchmarkRun that succeeded);
-- anything else → Progressing with the operator's message.
local hs = {}
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the operator"
  return hs
end
local c = {}
for _, cond in ipairs(obj.status.conditions) do
  c[cond.type] = cond
end
local function said(cond)
  local m = cond.reason or ""
  if cond.message ~= nil and cond.message ~= "" then
    m = m .. ": " .. cond.message
  end
  return m
end
if c.Paused ~= nil and c.Paused.status == "True" then
  hs.status = "Suspended"
  hs.message = said(c.Paused)
  return hs
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if c.Ready ~= nil and c.Ready.observedGeneration ~= nil then
  observed = c.Ready.observedGeneration
end
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "the operator has not observed generation " .. generation .. " yet"
  return hs
end
if c.Degraded ~= nil and c.Degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = said(c.Degraded)
  return hs
end
if c.Ready ~= nil and c.Ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(c.Ready)
  return hs
end
hs.status = "Progressing"
if c.Progressing ~= nil and c.Progressing.status == "True" then
  hs.message = said(c.Progressing)
elseif c.Ready ~= nil then
  hs.message = said(c.Ready)
else
  hs.message = "waiting for the operator"
end
return hs
