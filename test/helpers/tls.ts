/**
 * A test CA of the test's own, made with openssl: ca.pem/ca.key, and a server certificate for
 * localhost, 127.0.0.1 and any `names` signed by it (srv.pem/srv.key), in folder `d`. Known only to the test:
 * what trusts it was told to.
 */
import { sh } from "./lazy";

export function makeCa(d: string, name = "lazy test corp CA", names: string[] = []): void {
  const run = (cmd: string) => {
    const r = sh(d, cmd);
    if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  };
  run(`openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=${name}'`);
  run("openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj '/CN=localhost'");
  run(`printf 'subjectAltName=DNS:localhost,IP:127.0.0.1${names.map((n) => `,DNS:${n}`).join("")}\\n' > ext.cnf`);
  run("openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf");
}
