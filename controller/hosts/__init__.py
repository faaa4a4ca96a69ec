"""Hosts: the intent compiled to Ansible variables, the inventory and the playbook runner."""
