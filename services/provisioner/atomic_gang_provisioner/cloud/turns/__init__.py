"""Launch turns: which pool may send its launch to EC2 now, and when the others ask again.

Many pools want to launch at once, and EC2 refuses both too many calls and launches
where it has no room left. So before its RunInstances or CreateFleet call a pool asks
for its turn; without one it sends nothing, gets ``Waiting`` and asks again later.

- ``budget``: EC2 limits an account's calls with token buckets (RunInstances has its
  own, and another for the instances it launches). ``ApiBudget`` keeps a copy of each,
  so every call we make takes a token first and EC2 has no reason to throttle us.
- ``waitline``: pools waiting for one scarce thing stand in a line, longest-waiting
  first; a pool keeps its place across retries and loses it when it stops asking.
- ``launchgate``: a pool's turn for the launch budget: it launches when the bucket holds
  a token for it and one for every pool ahead of it in the line.
- ``capacity`` and ``capacity_line``: a cell (instance type, zone, reservation,
  placement group) where EC2 ran out of capacity is *short*; it learns how many of our
  instances fit, and its own line says who launches, who probes for more room, who waits.

``cloud/aws/launch_turns.py`` applies them to one launch plan of the EC2 adapter (it reads the
adapter's ``LaunchPlan``, so it lives there): the cells of the plan's placements first,
then the launch budget; after the call, the cells learn from EC2's answer.
"""
