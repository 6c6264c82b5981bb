// Validates Gateway API objects against the Gateway API v1 schemas (generated from its CRDs by
// @kubernetes-models/gateway-api). Reads a JSON array of objects on stdin; prints one line per
// object ("ok Kind/name" or "invalid Kind/name: why") and exits 1 if any is invalid.
//   node validate.mjs < objects.json
import { readFileSync } from "node:fs";

import { GRPCRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/GRPCRoute";
import { Gateway } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/Gateway";
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute";

const MODELS = { Gateway, GRPCRoute, HTTPRoute };
const API_VERSION = "gateway.networking.k8s.io/v1";

let failed = false;
for (const object of JSON.parse(readFileSync(0, "utf8"))) {
  const label = `${object.kind}/${object.metadata?.name}`;
  const Model = MODELS[object.kind];
  try {
    if (object.apiVersion !== API_VERSION || Model === undefined) {
      throw new Error(`not a known ${API_VERSION} kind: ${object.apiVersion} ${object.kind}`);
    }
    new Model(object).validate();
    console.log(`ok ${label}`);
  } catch (error) {
    failed = true;
    console.log(`invalid ${label}: ${error.message}`);
  }
}
process.exit(failed ? 1 : 0);
