(function () {
  "use strict";
  function openTo(el) {
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
  }
  function setAll(open) {
    document.querySelectorAll("main details").forEach(function (d) { d.open = open; });
  }
  document.addEventListener("click", function (ev) {
    var more = ev.target.closest("button.more");
    if (more) {
      var data = more.previousElementSibling;
      var pre = data && data.previousElementSibling;
      if (data && data.classList.contains("rest") && pre) {
        // Our own escaped markup, kept as a JSON string in a data block.
        pre.insertAdjacentHTML("beforeend", JSON.parse(data.textContent));
        data.remove();
        more.remove();
      }
      return;
    }
    var link = ev.target.closest("nav a");
    if (link) {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (target) openTo(target);
    }
  });
  var expand = document.getElementById("expand-all");
  var collapse = document.getElementById("collapse-all");
  if (expand) expand.addEventListener("click", function () { setAll(true); });
  if (collapse) collapse.addEventListener("click", function () { setAll(false); });
  if (location.hash.length > 1) {
    var start = document.getElementById(location.hash.slice(1));
    if (start) openTo(start);
  }
  document.documentElement.setAttribute("data-ready", "1");
})();
