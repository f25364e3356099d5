// Preload (node --require): a listen(port[, cb]) with no host binds 127.0.0.1 instead of
// every interface, and says on stderr which port it got (so PORT=0 can be used).
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  if ((typeof port === "number" || /^\d+$/.test(String(port))) && typeof rest[0] !== "string") {
    this.once("listening", () => console.error(`loopback listening on 127.0.0.1:${this.address().port}`));
    return listen.call(this, Number(port), "127.0.0.1", ...rest);
  }
  return listen.call(this, port, ...rest);
};
