#pragma once

// The constant style and script of report.html, inline (nothing is fetched). Colours keep a
// contrast of at least 4.5:1 against the white page for text and 3:1 for marks, and every
// mark differs by shape or position as well as by colour.

#include <string_view>

namespace ks::report {

/// The page's CSS.
inline constexpr std::string_view page_css = R"css(
:root{color-scheme:light;--text:#1f2328;--muted:#57606a;--line:#d0d7de;--accepted:#1a7f37;
--rejected:#6e7781;--failed:#cf222e;--open:#0969da;--best:#bc4c00;--eager:#1a7f37;
--compile:#8250df;--lineage:#1f2328}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--text);background:#fff;
margin:0 auto;max-width:1180px;padding:0 20px 60px;line-height:1.45}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{margin-top:1.8em;border-bottom:1px solid var(--line)}
h3{margin-top:1.6em}.muted{color:var(--muted)}
nav ul{display:flex;flex-wrap:wrap;gap:.4em 1.2em;list-style:none;padding:0}
table{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:.25em .7em;text-align:left;vertical-align:top}
td.num,th.num{text-align:right}tfoot th,tfoot td{font-weight:600;border-top:2px solid var(--text)}
th button{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer;
color:inherit;text-decoration:underline dotted}
th[aria-sort=ascending] button::after{content:" \25B2"}
th[aria-sort=descending] button::after{content:" \25BC"}
.warnings li{color:#9a6700}.warnings{border-left:4px solid #bf8700;padding:.3em 1.5em;
background:#fff8c5}
figure{margin:.8em 0}figcaption{color:var(--muted);font-size:.9em;max-width:900px}
.scroll{overflow-x:auto}
svg.plot{font-size:11px;fill:var(--text);display:block}
svg .frame{fill:none;stroke:var(--muted)}svg .grid{stroke:#eaeef2}svg .label{font-size:12px}
svg .ceiling{fill:none;stroke:var(--text);stroke-width:2}svg .ceiling-label{font-size:11px}
svg .gain{stroke:var(--muted);stroke-dasharray:3 3}
svg .m-reference{fill:#fff;stroke:var(--muted);stroke-width:2}
svg .m-best{fill:var(--best)}svg .m-eager{fill:var(--eager)}svg .m-compile{fill:var(--compile)}
svg .edge{stroke:#afb8c1;stroke-width:1.2}svg .edge.lineage{stroke:var(--lineage);stroke-width:3.5}
svg .node circle{stroke:#fff;stroke-width:1.5}svg .node.lineage circle{stroke:var(--lineage);
stroke-width:3}svg a:focus circle,svg a:hover circle{stroke:var(--best);stroke-width:3}
.g-accepted,svg .g-accepted circle{fill:var(--accepted);background:var(--accepted)}
.g-rejected,svg .g-rejected circle{fill:var(--rejected);background:var(--rejected)}
.g-failed,svg .g-failed circle{fill:var(--failed);background:var(--failed)}
.g-open,svg .g-open circle{fill:var(--open);background:var(--open)}
.g-text-failed{color:var(--failed)}.g-text-accepted{color:var(--accepted)}
svg .best-so-far{fill:none;stroke:var(--best);stroke-width:2}
svg .spread line{stroke:var(--muted);stroke-width:3}svg .spread circle{fill:var(--text)}
svg .spread.winner circle{fill:var(--best)}svg .final path{fill:var(--compile)}
svg .round line{stroke:var(--compile);stroke-width:1.5}
svg .lane{fill:#f6f8fa}svg .job.not-ok rect{stroke:var(--failed);stroke-width:2}
.p-verify,svg .p-verify rect{fill:#0969da;background:#0969da}
.p-reference_time,svg .p-reference_time rect{fill:#57606a;background:#57606a}
.p-branch_time,svg .p-branch_time rect{fill:#1a7f37;background:#1a7f37}
.p-retime,svg .p-retime rect{fill:#9a6700;background:#9a6700}
.p-final_round,svg .p-final_round rect{fill:#8250df;background:#8250df}
.p-profile,svg .p-profile rect{fill:#cf222e;background:#cf222e}
.p-learned_skill,svg .p-learned_skill rect{fill:#bc4c00;background:#bc4c00}
.p-other,svg .p-other rect{fill:#6e7781;background:#6e7781}
ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.3em 1.4em;padding:0;font-size:.9em}
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em;
border-radius:2px}
.swatch.m-reference{border:2px solid var(--muted);border-radius:50%;box-sizing:border-box}
.swatch.m-best{background:var(--best);transform:rotate(45deg) scale(.8)}
.swatch.m-eager{background:var(--eager)}
.swatch.m-compile{background:var(--compile);clip-path:polygon(50% 0,100% 100%,0 100%)}
.swatch.ceiling-swatch,.swatch.lineage-swatch{height:3px;vertical-align:.25em;
background:var(--text)}
tr.lineage-row th{box-shadow:inset 4px 0 var(--lineage)}
pre{background:#f6f8fa;padding:.8em;overflow:auto;max-height:32em;font-size:.85em}
td.why{max-width:32em;overflow-wrap:anywhere;font-size:.9em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
summary{cursor:pointer}
)css";

/// The page's script: sorts the speedup table by a column, and opens the <details> that holds
/// a node's row when a node of a tree links to it. The page reads the same without it.
inline constexpr std::string_view page_script = R"js(
document.querySelectorAll('table.sortable').forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, column) {
    var button = th.querySelector('button');
    if (!button) return;
    button.addEventListener('click', function () {
      var ascending = th.getAttribute('aria-sort') !== 'ascending';
      Array.prototype.forEach.call(heads, function (h) { h.setAttribute('aria-sort', 'none'); });
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute('data-sort') || '';
        var y = b.cells[column].getAttribute('data-sort') || '';
        if (x === '' || y === '') return (x === '') - (y === '');
        var nx = Number(x), ny = Number(y);
        var order = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
        return ascending ? order : -order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
function openTarget() {
  var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
  var holder = target ? target.closest('details') : null;
  if (holder) { holder.open = true; target.scrollIntoView(); }
}
window.addEventListener('hashchange', openTarget);
openTarget();
)js";

} // namespace ks::report
